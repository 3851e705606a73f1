// A real OpenID Connect provider for Casework's tests: panva's oidc-provider (an OpenID
// Certified implementation) on 127.0.0.1, on a port the OS chooses. Started and stopped by
// tests/fakes/oidc_provider.py, which reads the first line this prints: "READY <issuer>".
//
// What the tests get from it:
//   - authorization code flow with PKCE, signed (RS256) ID tokens, JWKS, userinfo,
//     RP-initiated logout, dynamic client registration (each test registers its client with
//     its own redirect URI);
//   - a `groups` scope whose claim lists the account's groups, in the ID token and userinfo;
//   - the dev login form of oidc-provider (any password; only the accounts below exist).
// Test controls, under /test/ (this process serves tests only):
//   PUT  /test/accounts/<id>  {"email", "name", "groups"}   create or change an account
//   POST /test/clock          {"offset": seconds}           move this provider's clock
//   GET  /test/other-jwks                                    a key set that signed nothing here
import http from 'node:http';

import * as jose from 'jose';
import Provider from 'oidc-provider';

const accounts = new Map();
let clockOffset = 0;
const realNow = Date.now.bind(Date);
// The provider's clock: every iat/exp it writes comes from Date.now.
Date.now = () => realNow() + clockOffset * 1000;

async function signingKey(kid) {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  return { ...(await jose.exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

const key = await signingKey('casework-test-1');
const other = await signingKey('casework-test-other');
const { d, p, q, dp, dq, qi, ...otherPublic } = other; // eslint-disable-line no-unused-vars

function readJson(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => { try { resolve(body ? JSON.parse(body) : {}); } catch (e) { reject(e); } });
  });
}

const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;

const provider = new Provider(issuer, {
  jwks: { keys: [key] },
  cookies: { keys: ['casework-test-cookie-key'] },
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    rpInitiatedLogout: { enabled: true },
  },
  pkce: { required: () => true },
  scopes: ['openid', 'email', 'profile', 'groups', 'offline_access'],
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'],
    groups: ['groups'],
  },
  // The groups claim in the ID token too (Entra ID, Okta and Keycloak put it there).
  conformIdTokenClaims: false,
  ttl: {
    AccessToken: 3600, AuthorizationCode: 60, IdToken: 300, Interaction: 3600, Session: 86400,
    Grant: 86400, RegistrationAccessToken: 86400,
  },
  // First-party client: no consent screen; grant what it asks for.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope(ctx.oidc.requestParamScopes ? [...ctx.oidc.requestParamScopes].join(' ') : 'openid');
    grant.addOIDCClaims(['email', 'email_verified', 'name', 'preferred_username', 'groups']);
    await grant.save();
    return grant;
  },
  async findAccount(ctx, id) {
    const account = accounts.get(id);
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        const current = accounts.get(id) || account;
        return {
          sub: id, email: current.email, email_verified: true, name: current.name,
          preferred_username: current.preferred_username || id, groups: current.groups || [],
        };
      },
    };
  },
});
provider.proxy = false;

const oidc = provider.callback();
server.on('request', async (req, res) => {
  const url = new URL(req.url, issuer);
  if (url.pathname.startsWith('/test/')) {
    try {
      if (req.method === 'PUT' && url.pathname.startsWith('/test/accounts/')) {
        const id = decodeURIComponent(url.pathname.slice('/test/accounts/'.length));
        accounts.set(id, await readJson(req));
        res.writeHead(204).end();
      } else if (req.method === 'POST' && url.pathname === '/test/clock') {
        clockOffset = Number((await readJson(req)).offset || 0);
        res.writeHead(204).end();
      } else if (req.method === 'GET' && url.pathname === '/test/other-jwks') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [otherPublic] }));
      } else {
        res.writeHead(404).end();
      }
    } catch (error) {
      res.writeHead(400).end(String(error));
    }
    return;
  }
  oidc(req, res);
});

process.stdout.write(`READY ${issuer}\n`);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
