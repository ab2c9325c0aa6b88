/**
 * The two-phase commit state machine (src/consensus/two-phase.ts) against a scripted peer:
 * the test plays the other members message by message (each encoded and decoded as on the
 * wire) and asserts what the machine sends, verifies, applies and rejects, on a scripted
 * clock. Happy path, failed members, out-of-order, duplicate, stale and forged messages,
 * timeouts, a member that is behind, and a coordinator that restarts.
 */
import t from 'tap';
import {
  TwoPhase,
  TwoPhaseCommit,
  decodeConsensus,
  encodeConsensus,
  type Clock,
  type TwoPhaseDeps,
  type TwoPhaseMsg,
  type TwoPhaseOut,
} from '../src/consensus/two-phase.js';

/** A clock the test moves by hand. */
class FakeClock implements Clock {
  now = 0;
  #next = 1;
  readonly timers = new Map<number, { at: number; fn: () => void }>();
  setTimeout(fn: () => void, ms: number): unknown {
    const h = this.#next++;
    this.timers.set(h, { at: this.now + ms, fn });
    return h;
  }
  clearTimeout(h: unknown): void {
    this.timers.delete(h as number);
  }
  /** Moves time on, firing due timers in order. */
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    for (;;) {
      const due = [...this.timers.entries()].filter(([, v]) => v.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.timers.delete(due[0]);
      this.now = due[1].at;
      due[1].fn();
      await settle();
    }
    this.now = end;
  }
}

/** Lets pending promise callbacks run (verify/apply are asynchronous). */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r));
};

interface Sent {
  to: string;
  type: 'request' | 'response' | 'result';
  id: string;
  ok?: boolean;
  apply?: boolean;
  ts?: number;
}

/** What a message looks like after a trip over the wire. */
function wire(from: string, m: TwoPhaseOut): TwoPhaseMsg {
  const { origin, msg } = decodeConsensus(encodeConsensus(`svc::${from}`, m));
  if (origin !== `svc::${from}`) throw new Error(`origin ${origin}`);
  return msg;
}

function describe(to: string, m: TwoPhaseMsg): Sent {
  const id = m.proposalId.toString('ascii');
  if (m.messageType === TwoPhase.VERIFICATION_REQUEST) return { to, type: 'request', id };
  if (m.messageType === TwoPhase.VERIFICATION_RESPONSE) return { to, type: 'response', id, ok: m.proposalVerificationResponse === TwoPhase.VERIFIED };
  return { to, type: 'result', id, apply: m.proposalResult === TwoPhase.APPLY, ts: m.commitTimeMs };
}

interface Prop {
  name: string;
  /** Members for whom it does not verify. */
  failsAt?: string[];
}

/** One member's machine with recording collaborators; the test is every other member. */
function member(
  self: string,
  o: {
    verifyMs?: number;
    applyTs?: number;
    applyFails?: boolean;
    verifyThrows?: boolean;
    earlyRequests?: number;
    authentic?: TwoPhaseDeps<Prop, string>['authentic'];
  } = {},
) {
  const clock = new FakeClock();
  const sent: Sent[] = [];
  /** The proposal each message was sent for (its name), in the order sent. */
  const about: Array<string | undefined> = [];
  const verified: string[] = [];
  const applied: Array<{ name: string; role: string; ts: number }> = [];
  const rejected: Array<{ name: string; why: string }> = [];
  const settled: Array<{ id: string; applied: boolean }> = [];
  const behind: Array<{ id: string; known: boolean }> = [];
  const ignored: string[] = [];
  const engine = new TwoPhaseCommit<Prop, string>({
    self,
    clock,
    coordinatorTimeoutMs: 1000,
    participantTimeoutMs: 2000,
    earlyRequests: o.earlyRequests,
    send: (to, m, p) => {
      sent.push(describe(to, wire(self, m)));
      about.push(p?.name);
    },
    verify: async (p) => {
      verified.push(p.name);
      if (o.verifyThrows) throw new Error('store closed');
      if (o.verifyMs) await new Promise<void>((r) => setTimeout(r, o.verifyMs));
      return !(p.failsAt ?? []).includes(self);
    },
    apply: async (p, r) => {
      if (o.applyFails) throw new Error('disk full');
      applied.push({ name: p.name, role: r.role, ts: r.commitTimeMs });
      return r.role === 'coordinator' ? o.applyTs : undefined;
    },
    reject: (p, why) => void rejected.push({ name: p.name, why }),
    settled: (_p, r) => void settled.push(r),
    behind: (id, _from, p) => void behind.push({ id, known: p !== undefined }),
    ignored: (from, why, r) => void ignored.push(`${from}: ${why} (${r.id}, coordinator ${r.coordinator})`),
    authentic: o.authentic,
  });
  /** A message from member `from` (via: the connection it came on, by default `from`'s own). */
  const from = (who: string, m: TwoPhaseOut, via = who): void => engine.receive(who, wire(who, m), via);
  const take = (): Sent[] => sent.splice(0);
  return { engine, clock, sent, about, take, verified, applied, rejected, settled, behind, ignored, from };
}

const id = (s: string): Buffer => Buffer.from(s, 'ascii');
const request = (p: string): TwoPhaseOut => ({ messageType: TwoPhase.VERIFICATION_REQUEST, proposalId: id(p) });
const response = (p: string, ok: boolean): TwoPhaseOut => ({
  messageType: TwoPhase.VERIFICATION_RESPONSE,
  proposalId: id(p),
  proposalVerificationResponse: ok ? TwoPhase.VERIFIED : TwoPhase.FAILED,
});
const result = (p: string, apply: boolean, ts = 0): TwoPhaseOut => ({
  messageType: TwoPhase.RESULT,
  proposalId: id(p),
  proposalResult: apply ? TwoPhase.APPLY : TwoPhase.REJECT,
  commitTimeMs: ts,
});

const MEMBERS = ['a', 'b', 'c'];

t.test('the encoding round-trips each message, and garbage is refused', async (t) => {
  const m = wire('a', result('p1', true, 1234));
  t.equal(m.messageType, TwoPhase.RESULT);
  t.equal(m.proposalResult, TwoPhase.APPLY);
  t.equal(m.commitTimeMs, 1234);
  t.equal(m.proposalId.toString('ascii'), 'p1');
  t.equal(wire('a', request('p2')).proposalVerificationResponse, 0, 'fields not sent decode as 0');
  t.throws(() => decodeConsensus(Buffer.from([0xff, 0xff, 0xff])));
});

t.test('happy path: the coordinator asks everyone, applies, then sends APPLY with its commit time', async (t) => {
  const a = member('a', { applyTs: 777 });
  a.engine.add('p1', { name: 'one' }, MEMBERS);
  t.same(a.engine.current, { id: 'p1', role: 'coordinator' });
  await settle();
  t.same(a.verified, ['one'], 'the coordinator checks its own proposal first');
  t.same(a.take(), [
    { to: 'b', type: 'request', id: 'p1' },
    { to: 'c', type: 'request', id: 'p1' },
  ]);
  a.from('b', response('p1', true));
  await settle();
  t.same(a.applied, [], 'not applied before every member verified');
  t.same(a.take(), []);
  a.from('c', response('p1', true));
  await settle();
  t.same(a.applied, [{ name: 'one', role: 'coordinator', ts: 0 }]);
  t.same(a.take(), [
    { to: 'b', type: 'result', id: 'p1', apply: true, ts: 777 },
    { to: 'c', type: 'result', id: 'p1', apply: true, ts: 777 },
  ]);
  t.same(a.settled, [{ id: 'p1', applied: true }]);
  t.same(a.rejected, []);
  t.equal(a.engine.current, null);
  t.notOk(a.engine.has('p1'));
  t.equal(a.clock.timers.size, 0, 'no timer left behind');
});

t.test('happy path as a member: verify on request, answer, apply on APPLY with the commit time', async (t) => {
  const b = member('b');
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  t.equal(b.engine.current, null, 'a member waits for the coordinator');
  t.same(b.verified, []);
  b.from('a', request('p1'));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p1', ok: true }]);
  t.same(b.engine.current, { id: 'p1', role: 'participant' });
  b.from('a', result('p1', true, 4242));
  await settle();
  t.same(b.applied, [{ name: 'one', role: 'participant', ts: 4242 }]);
  t.same(b.verified, ['one'], 'verified once');
  t.same(b.settled, [{ id: 'p1', applied: true }]);
  t.equal(b.engine.current, null);
});

t.test('a member that fails: REJECT to every member, nothing applied', async (t) => {
  const a = member('a');
  a.engine.add('p1', { name: 'one' }, MEMBERS);
  await settle();
  a.take();
  a.from('b', response('p1', false));
  await settle();
  t.same(a.take(), [
    { to: 'b', type: 'result', id: 'p1', apply: false, ts: 0 },
    { to: 'c', type: 'result', id: 'p1', apply: false, ts: 0 },
  ]);
  t.same(a.applied, []);
  t.equal(a.rejected.length, 1);
  t.match(a.rejected[0]?.why, /b could not verify it/);
  // c's late VERIFIED changes nothing.
  a.from('c', response('p1', true));
  await settle();
  t.same(a.take(), []);
  t.same(a.applied, []);
});

t.test('as a member that cannot verify: FAILED, and the round is over here', async (t) => {
  const b = member('b');
  b.engine.add('p1', { name: 'one', failsAt: ['b'] }, MEMBERS);
  b.from('a', request('p1'));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p1', ok: false }]);
  t.match(b.rejected, [{ name: 'one', why: /does not verify here/ }]);
  t.notOk(b.engine.has('p1'));
});

t.test('the coordinator fails its own check: REJECT without asking anyone', async (t) => {
  const a = member('a');
  a.engine.add('p1', { name: 'one', failsAt: ['a'] }, MEMBERS);
  await settle();
  t.same(
    a.take().map((s) => s.type + (s.apply ? ':apply' : ':reject')),
    ['result:reject', 'result:reject'],
  );
  t.match(a.rejected, [{ why: /does not verify at the coordinator/ }]);
});

t.test('an apply that fails at the coordinator turns into REJECT', async (t) => {
  const a = member('a', { applyFails: true });
  a.engine.add('p1', { name: 'one' }, ['a', 'b']);
  await settle();
  a.take();
  a.from('b', response('p1', true));
  await settle();
  t.same(a.take(), [{ to: 'b', type: 'result', id: 'p1', apply: false, ts: 0 }]);
  t.match(a.rejected, [{ why: /not applied here: disk full/ }]);
});

t.test('out of order: a request before the proposal is held; RESULT before REQUEST verifies, then applies', async (t) => {
  const b = member('b');
  b.from('a', request('p1'));
  await settle();
  t.same(b.take(), [], 'nothing to answer yet');
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p1', ok: true }], 'answered once the proposal came');

  const c = member('c');
  c.engine.add('p2', { name: 'two' }, MEMBERS);
  c.from('a', result('p2', true, 99));
  await settle();
  t.same(c.verified, ['two'], 'verified before it is applied');
  t.same(c.applied, [{ name: 'two', role: 'participant', ts: 99 }]);
  t.same(c.take(), [], 'no answer to a request never made');
  t.same(c.behind, []);
});

t.test('with no early requests held, a request for an unknown proposal is answered FAILED at once', async (t) => {
  const b = member('b', { earlyRequests: 0 });
  b.from('a', request('p1'));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p1', ok: false }]);
  t.same(b.about, [undefined], 'sent for no known proposal');
  b.engine.add('p2', { name: 'two' }, MEMBERS);
  b.from('a', request('p2'));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p2', ok: true }]);
  t.same(b.about, [undefined, 'two'], 'each message goes with the proposal it is about');
});

t.test('a member behind: APPLY for an unknown proposal, or one that does not verify here', async (t) => {
  const b = member('b');
  b.from('a', result('p9', true));
  await settle();
  t.same(b.behind, [{ id: 'p9', known: false }]);
  b.from('a', result('p8', false));
  await settle();
  t.same(b.behind, [{ id: 'p9', known: false }], 'a REJECT for an unknown round is nothing to catch up on');
  b.engine.add('p7', { name: 'seven', failsAt: ['b'] }, MEMBERS);
  b.from('a', result('p7', true));
  await settle();
  t.same(b.behind, [
    { id: 'p9', known: false },
    { id: 'p7', known: true },
  ]);
  t.same(b.applied, []);
  t.match(b.rejected, [{ name: 'seven', why: /does not verify here/ }]);
});

t.test('responses for an unknown or old proposal are ignored', async (t) => {
  const a = member('a');
  a.from('b', response('nope', true));
  a.engine.add('p1', { name: 'one' }, MEMBERS);
  await settle();
  a.take();
  a.from('b', response('p0', true));
  a.from('c', response('p0', false));
  await settle();
  t.same(a.take(), [], 'a FAILED for another round does not reject this one');
  a.from('b', response('p1', true));
  a.from('c', response('p1', true));
  await settle();
  t.equal(a.applied.length, 1);
  a.take();
  a.from('b', response('p1', false));
  await settle();
  t.same(a.take(), [], 'a response after the round ended changes nothing');
  t.same(a.rejected, []);
});

t.test('duplicates: the same response twice counts once; the same request twice is answered twice; the same APPLY twice applies once', async (t) => {
  const a = member('a');
  a.engine.add('p1', { name: 'one' }, MEMBERS);
  await settle();
  a.take();
  a.from('b', response('p1', true));
  a.from('b', response('p1', true));
  await settle();
  t.same(a.applied, [], 'b twice is not b and c');
  a.from('c', response('p1', true));
  await settle();
  t.equal(a.applied.length, 1);

  const b = member('b');
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  b.from('a', request('p1'));
  await settle();
  b.from('a', request('p1'));
  await settle();
  t.same(b.take(), [
    { to: 'a', type: 'response', id: 'p1', ok: true },
    { to: 'a', type: 'response', id: 'p1', ok: true },
  ]);
  b.from('a', result('p1', true, 5));
  b.from('a', result('p1', true, 5));
  await settle();
  b.from('a', result('p1', true, 5));
  await settle();
  t.same(b.applied, [{ name: 'one', role: 'participant', ts: 5 }], 'applied once');
  t.same(b.behind, [], 'a repeated APPLY of a round just applied is not a member behind');
});

t.test('a request repeated while its verification runs is answered once', async (t) => {
  const b = member('b', { verifyMs: 20 });
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  b.from('a', request('p1'));
  b.from('a', request('p1'));
  await new Promise((r) => setTimeout(r, 60));
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p1', ok: true }]);
  t.same(b.verified, ['one']);
});

t.test('a RESULT during the verification: no answer goes out; APPLY waits for it and applies', async (t) => {
  const b = member('b', { verifyMs: 20 });
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  b.from('a', request('p1'));
  b.from('a', result('p1', true, 3));
  await new Promise((r) => setTimeout(r, 60));
  t.same(b.take(), [], 'the stale verification is not answered');
  t.same(b.verified, ['one'], 'not verified twice');
  t.same(b.applied, [{ name: 'one', role: 'participant', ts: 3 }]);

  const c = member('c', { verifyMs: 20 });
  c.engine.add('p2', { name: 'two' }, MEMBERS);
  c.from('a', request('p2'));
  c.from('a', result('p2', false));
  await new Promise((r) => setTimeout(r, 60));
  t.same(c.take(), []);
  t.same(c.applied, []);
  t.match(c.rejected, [{ name: 'two', why: /rejected by the coordinator/ }]);
});

t.test('timeouts: no response → REJECT, and a late response is ignored; no result → the member gives up', async (t) => {
  const a = member('a');
  a.engine.add('p1', { name: 'one' }, MEMBERS);
  await settle();
  a.take();
  a.from('b', response('p1', true));
  await a.clock.advance(999);
  t.same(a.take(), [], 'not before the timeout');
  await a.clock.advance(1);
  t.same(a.take(), [
    { to: 'b', type: 'result', id: 'p1', apply: false, ts: 0 },
    { to: 'c', type: 'result', id: 'p1', apply: false, ts: 0 },
  ]);
  t.match(a.rejected, [{ why: /timed out/ }]);
  a.from('c', response('p1', true));
  await settle();
  t.same(a.applied, [], 'the late response applies nothing');
  t.same(a.take(), []);

  const b = member('b');
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  b.from('a', request('p1'));
  await settle();
  await b.clock.advance(2000);
  t.match(b.rejected, [{ why: /no result from coordinator a/ }]);
  t.equal(b.engine.current, null, 'free for the next round');
  t.notOk(b.engine.has('p1'));
});

t.test('a round nobody starts is forgotten; the next one waits for the current', async (t) => {
  const b = member('b');
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  b.engine.add('p2', { name: 'two' }, MEMBERS);
  b.from('a', request('p1'));
  b.from('a', request('p2'));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p1', ok: true }], 'one round at a time');
  b.from('a', result('p1', true));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p2', ok: true }], 'the held request is answered next');

  const c = member('c');
  c.engine.add('p3', { name: 'three' }, MEMBERS);
  await c.clock.advance(3000);
  t.match(c.rejected, [{ name: 'three', why: /never decided/ }]);
  t.notOk(c.engine.has('p3'));
});

t.test('forged and misdirected messages are ignored', async (t) => {
  // The connection a message came on must be the member it names (as the admin service checks peers).
  const a = member('a', { authentic: (from, _p, via) => from === via });
  a.engine.add('p1', { name: 'one' }, MEMBERS);
  await settle();
  a.take();
  a.from('x', response('p1', true));
  a.from('c', response('p1', true), 'x');
  a.from('a', response('p1', true), 'b');
  a.from('b', response('p1', true));
  await settle();
  t.same(a.applied, [], 'a non-member, a forged sender and a copy of its own id count for nothing');
  t.same(a.ignored, ['c: forged (p1, coordinator a)', 'a: forged (p1, coordinator a)'], 'the forged senders are reported');
  a.from('c', response('p1', true));
  await settle();
  t.equal(a.applied.length, 1);

  const b = member('b');
  b.engine.add('p2', { name: 'two' }, MEMBERS);
  b.from('c', request('p2'));
  b.from('c', result('p2', true));
  await settle();
  t.same(b.take(), [], 'only the coordinator asks');
  t.same(b.applied, [], 'only the coordinator decides');
  t.equal(b.ignored.length, 2);
  // A request held before its proposal, from the wrong member, is dropped once the proposal comes.
  b.from('c', request('p3'));
  b.engine.add('p3', { name: 'three' }, MEMBERS);
  await settle();
  t.same(b.take(), []);
  t.same(b.ignored, ['c: not-coordinator (p2, coordinator a)', 'c: not-coordinator (p2, coordinator a)', 'c: not-coordinator (p3, coordinator a)']);
});

t.test('coordinator restart: the new machine asks again; the member answers again and applies', async (t) => {
  const b = member('b');
  b.engine.add('p1', { name: 'one' }, ['a', 'b']);
  const a1 = member('a');
  a1.engine.add('p1', { name: 'one' }, ['a', 'b']);
  await settle();
  t.same(a1.take(), [{ to: 'b', type: 'request', id: 'p1' }]);
  b.from('a', request('p1'));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p1', ok: true }]);
  // a stops before the answer reaches it, and starts again with nothing in memory.
  a1.engine.close();
  const a2 = member('a');
  a2.from('b', response('p1', true));
  await settle();
  t.same(a2.applied, [], 'an answer to a round the restarted coordinator does not know');
  a2.engine.add('p1', { name: 'one' }, ['a', 'b']);
  await settle();
  t.same(a2.take(), [{ to: 'b', type: 'request', id: 'p1' }]);
  b.from('a', request('p1'));
  await settle();
  const answer = b.take();
  t.same(answer, [{ to: 'a', type: 'response', id: 'p1', ok: true }], 'the member answers the new coordinator');
  a2.from('b', response('p1', true));
  await settle();
  t.same(a2.applied, [{ name: 'one', role: 'coordinator', ts: 0 }]);
  const [apply] = a2.take();
  t.same(apply, { to: 'b', type: 'result', id: 'p1', apply: true, ts: 0 });
  b.from('a', result('p1', true));
  await settle();
  t.same(b.applied, [{ name: 'one', role: 'participant', ts: 0 }]);
  t.equal(a1.applied.length, 0, 'the stopped machine applied nothing');
  t.equal(a1.clock.timers.size, 0, 'and left no timer');
});

t.test('a verification or apply that throws ends the round as not applied', async (t) => {
  const a = member('a', { verifyThrows: true });
  a.engine.add('p1', { name: 'one' }, MEMBERS);
  await settle();
  t.same(
    a.take().map((x) => `${x.to}:${x.type}:${x.apply}`),
    ['b:result:false', 'c:result:false'],
  );
  t.match(a.rejected, [{ why: /verification failed: store closed/ }]);

  const b = member('b', { verifyThrows: true });
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  b.from('a', request('p1'));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p1', ok: false }], 'a member whose check throws answers FAILED');

  const c = member('c', { applyFails: true });
  c.engine.add('p1', { name: 'one' }, MEMBERS);
  c.from('a', request('p1'));
  await settle();
  c.from('a', result('p1', true));
  await settle();
  t.match(c.rejected, [{ name: 'one', why: /apply failed: disk full/ }]);
  t.same(c.settled, [{ id: 'p1', applied: false }]);
});

t.test('early requests are held up to the bound, the oldest dropped first; known rounds are listed', async (t) => {
  const b = member('b', { earlyRequests: 2 });
  b.from('a', request('p1'));
  b.from('a', request('p2'));
  b.from('a', request('p3'));
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  b.engine.add('p2', { name: 'two' }, MEMBERS);
  b.engine.add('p3', { name: 'three' }, MEMBERS);
  t.same(
    [...b.engine.proposals()].map((x) => `${x.id}:${x.proposal.name}:${x.coordinator}`),
    ['p1:one:a', 'p2:two:a', 'p3:three:a'],
  );
  t.ok(b.engine.has('p2'));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p2', ok: true }], 'p1 was dropped to hold p3; p2 is answered first');
  b.from('a', result('p2', true));
  await settle();
  t.same(b.take(), [{ to: 'a', type: 'response', id: 'p3', ok: true }]);
  // A message type the machine does not know changes nothing.
  b.engine.receive('a', { ...wire('a', request('p1')), messageType: 9 }, 'a');
  await settle();
  t.same(b.take(), []);
  t.same(b.engine.current, { id: 'p3', role: 'participant' });
});

t.test('a closed machine sends and applies nothing', async (t) => {
  const b = member('b');
  b.engine.add('p1', { name: 'one' }, MEMBERS);
  b.engine.close();
  b.from('a', request('p1'));
  b.from('a', result('p1', true));
  b.engine.add('p2', { name: 'two' }, MEMBERS);
  await settle();
  t.same(b.take(), []);
  t.same(b.applied, []);
});
