// A real OpenID provider (npm oidc-provider, certified) for the sign-in tests, on loopback only.
// argv: a JSON of {clients: [...]} as oidc-provider takes them. Prints {"issuer": ...} once listening.
// Accounts: alice (group "dev") and bob (group "ops"); any password. Logging in goes through the
// devInteractions form (POST /interaction/<uid> with prompt=login&login=<name>); consent is granted at once
// so the only page a test drives is the login form.
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

// ESM resolves packages beside the script, not in tools/node: the fixture names the module's file.
const { default: Provider } = await import(pathToFileURL(process.env.OIDC_PROVIDER_MODULE).href);

const ACCOUNTS = {
  alice: { email: 'alice@example.test', name: 'Alice Example', groups: ['dev'] },
  bob: { email: 'bob@example.test', name: 'Bob Example', groups: ['ops'] },
};

const config = JSON.parse(process.argv[2] || '{}');
const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: config.clients || [],
    claims: { openid: ['sub'], email: ['email'], profile: ['name'], groups: ['groups'] },
    // Groups go into the ID token itself, as Keycloak and Okta do with a groups claim mapper.
    conformIdTokenClaims: false,
    cookies: { keys: ['jarvis-test-cookie-key'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    async findAccount(ctx, id) {
      const account = ACCOUNTS[id];
      if (!account) return undefined;
      return { accountId: id, async claims() { return { sub: id, ...account }; } };
    },
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid email profile groups');
      grant.addOIDCClaims(['email', 'name', 'groups']);
      await grant.save();
      return grant;
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
