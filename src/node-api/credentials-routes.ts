/**
 * Credentials: register, log in, log out, refresh, verify
 * (`/biome/register|login|logout|token|verify`).
 */
import { ApiError } from '../http/api-error.js';
import type { Answer } from '../http/route.js';
import { log } from '../log.js';
import { objectBody, optString, PRINTABLE, reqString, type JsonObject } from './body.js';
import { json, requireUser, type AuthedCall, type Router } from './router.js';
import { nodeReplies } from './replies.js';
import type { UserStore } from './users-store.js';
import { Denied } from '../store/record-errors.js';
import type { TokenService } from '../auth/tokens.js';
import { nodeErrors } from './errors.js';

export const USERNAME_RULE = { max: 256, pattern: PRINTABLE, patternHelp: 'must not contain control characters' };
export const PASSWORD_RULE = { max: 1024 };

export function credentialsBody(b: JsonObject): { username: string; password: string } {
  return { username: reqString(b, 'username', USERNAME_RULE), password: reqString(b, 'hashed_password', PASSWORD_RULE) };
}

export function registerCredentialRoutes(r: Router, users: UserStore, tokens: TokenService): void {
  r.add({
    method: 'post',
    path: '/biome/register',
    permission: 'public',
    reply: nodeReplies.registered,
    body: (req) => credentialsBody(objectBody(req)),
    handler: async ({ body: { username, password } }) => {
      const u = await users.create(username, password);
      log.info(`user ${u.user_id} created`);
      return json({ message: 'User created successfully', data: { user_id: u.user_id, username: u.username } });
    },
  });

  r.add({
    method: 'post',
    path: '/biome/login',
    permission: 'public',
    reply: nodeReplies.login,
    body: (req) => credentialsBody(objectBody(req)),
    handler: async ({ req, body: { username, password } }) => {
      const u = await users.checkPassword(username, password, undefined, req.remoteAddress).catch((err: unknown) => {
        if (err instanceof Denied) log.info(`failed login attempt from ${req.remoteAddress}`);
        if (err instanceof ApiError && (err.status === 429 || err.status === 503))
          log.debug(`login from ${req.remoteAddress} refused: ${err.status}`);
        throw err;
      });
      const claims = { userId: u.user_id, gen: u.token_gen };
      return json({
        message: 'Successful login',
        user_id: u.user_id,
        token: await tokens.issueAccess(claims),
        refresh_token: await tokens.issueRefresh(claims),
      });
    },
  });

  const logout = async (c: AuthedCall): Promise<Answer> => {
    const userId = requireUser(c);
    if (c.identity.kind !== 'user' || c.identity.via !== 'biome') {
      throw nodeErrors.logoutNeedsBiome();
    }
    await users.logout(userId);
    return json({ message: 'User successfully logged out' });
  };
  r.add({
    method: 'patch',
    path: '/biome/logout',
    permission: 'authenticated',
    reply: nodeReplies.message,
    handler: logout,
  });
  r.add({
    method: 'post',
    path: '/biome/logout',
    permission: 'authenticated',
    reply: nodeReplies.message,
    handler: logout,
  });

  r.add({
    method: 'post',
    path: '/biome/token',
    permission: 'public',
    reply: nodeReplies.token,
    body: objectBody,
    handler: async ({ body: b }) => {
      const jwt = optString(b, 'refresh_token', { max: 4096 }) ?? optString(b, 'token', { max: 4096 });
      if (jwt === undefined) throw nodeErrors.missingRefreshToken();
      const claims = await tokens.verifyRefresh(jwt);
      const u = claims ? users.get(claims.userId) : undefined;
      if (!claims || !u || u.token_gen !== claims.gen) throw nodeErrors.invalidRefreshToken();
      return json({ token: await tokens.issueAccess({ userId: u.user_id, gen: u.token_gen }) });
    },
  });

  r.add({
    method: 'post',
    path: '/biome/verify',
    permission: 'authenticated',
    reply: nodeReplies.verified,
    load: requireUser,
    body: (req) => credentialsBody(objectBody(req)),
    handler: async ({ req, loaded: userId, body: { username, password } }) => {
      const u = await users.checkPassword(username, password, userId, req.remoteAddress);
      return json({ message: 'Successful verification', user_id: u.user_id });
    },
  });
}
