/**
 * A headless Chromium for the browser tests: the binary @sparticuz/chromium ships inside its
 * npm package (unpacked to the temp directory on first use, nothing downloaded), driven by
 * playwright-core. The browser is kept off the network: no background fetches, updates,
 * sync, crash reports or metrics, and every host name but 127.0.0.1 resolves to nothing.
 * The package's arguments that weaken the page's security (web security off, insecure
 * content allowed) are left out, so the page runs under its real Content Security Policy.
 */
import { chromium, type Browser } from 'playwright-core';
import sparticuz from '@sparticuz/chromium';

const DROPPED = new Set(['--disable-web-security', '--allow-running-insecure-content', '--single-process', '--no-zygote']);

const OFFLINE = [
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-extensions',
  '--disable-client-side-phishing-detection',
  '--disable-breakpad',
  '--no-first-run',
  '--no-pings',
  '--metrics-recording-only',
  '--safebrowsing-disable-auto-update',
  '--disable-domain-reliability',
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

export async function launchBrowser(): Promise<Browser> {
  const args = sparticuz.args.filter((a) => !DROPPED.has(a));
  return chromium.launch({ executablePath: await sparticuz.executablePath(), args: [...args, ...OFFLINE], headless: true, timeout: 60_000 });
}
