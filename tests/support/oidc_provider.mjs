// A real OpenID provider (npm oidc-provider, certified) for the sign-in tests, on loopback only.
// argv: a JSON of {clients: [...], options: {...}}, clients as oidc-provider takes them. Prints {"issuer": ...} once
// listening. Options: conformIdTokenClaims (the library's default, true: email, name and groups only in the userinfo
// answer, as OpenID Connect says; false puts them in the ID token too), groupsClaim (default "groups"; a dotted path
// such as "realm_access.roles" nests the groups as Keycloak does).
// Accounts: alice (group "dev"), bob (group "ops"), carol (groups "qa" and "design"); any password. Logging in
// goes through the devInteractions form (POST /interaction/<uid> with prompt=login&login=<name>); consent is
// granted at once so the only page a test drives is the login form.
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';

// ESM resolves packages beside the script, not in tools/node: the fixture names the module's file.
const { default: Provider } = await import(pathToFileURL(process.env.OIDC_PROVIDER_MODULE).href);

const ACCOUNTS = {
  alice: { email: 'alice@example.test', name: 'Alice Example', groups: ['dev'] },
  bob: { email: 'bob@example.test', name: 'Bob Example', groups: ['ops'] },
  carol: { email: 'carol@example.test', name: 'Carol Example', groups: ['qa', 'design'] },
};

const config = JSON.parse(process.argv[2] || '{}');
const options = config.options || {};
const [groupsClaim, ...groupsPath] = (options.groupsClaim || 'groups').split('.');
// An account's claims with its groups where groupsClaim says: {groups: [...]} or {realm_access: {roles: [...]}}.
const claimsOf = (id, { groups, ...rest }) => ({
  sub: id,
  ...rest,
  [groupsClaim]: groupsPath.reduceRight((inner, key) => ({ [key]: inner }), groups),
});
const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: config.clients || [],
    claims: { openid: ['sub'], email: ['email'], profile: ['name'], groups: [groupsClaim] },
    conformIdTokenClaims: options.conformIdTokenClaims ?? true,
    cookies: { keys: ['jarvis-test-cookie-key'] },
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    async findAccount(ctx, id) {
      const account = ACCOUNTS[id];
      if (!account) return undefined;
      return { accountId: id, async claims() { return claimsOf(id, account); } };
    },
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
      grant.addOIDCScope('openid email profile groups');
      grant.addOIDCClaims(['email', 'name', groupsClaim]);
      await grant.save();
      return grant;
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
