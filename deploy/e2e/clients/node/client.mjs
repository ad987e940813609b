// The Node.js client of deploy/e2e/clients: oauth4webapi (panva) against the
// real token service and resource server. It is given a JSON file:
//
//   {"issuer": URL, "api": URL, "clients": [CLIENT...]}
//   CLIENT: {"name": N, "client_id": ID, "auth": "private_key_jwt", "jwk_file": F, "wrong_jwk_file": F}
//         | {"name": N, "client_id": ID, "auth": "private_key_jwt", "alg": A, "pem_file": F}
//         | {"name": N, "client_id": ID, "auth": "client_secret_basic", "client_secret": S}
//
// and prints one JSON object a line for each step (the Go test asserts on
// them): the discovered metadata, then for each client a token
// (client_credentials), GET /api/v1/me/ with it, its revocation (RFC 7009),
// GET /api/v1/me/ again (401), and for a key client a token request signed
// with a key the server does not know (invalid_client). A key client's key
// is a private JWK (its kid sent) or a PKCS#8 PEM file as the
// authentication guide's openssl recipe makes it (no kid); oauth4webapi's
// PrivateKeyJwt signs as it comes, and the header and lifetime of its
// first assertion are printed (step "assertion"). With "dpop": true in the
// file, each client runs the DPoP flow instead (runDPoP). It exits 1 on the first
// unexpected failure, after printing it.
import { readFile } from 'node:fs/promises'
import * as oauth from 'oauth4webapi'

const insecure = { [oauth.allowInsecureRequests]: true } // the issuer is http on loopback
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')

// importJWK imports a private JWK for signing, with the algorithm its
// "alg" names (ES256, ES384, RS256, EdDSA).
async function importJWK(file) {
  const jwk = JSON.parse(await readFile(file, 'utf8'))
  const { kid, alg } = jwk
  let algorithm
  switch (alg) {
    case 'ES256': algorithm = { name: 'ECDSA', namedCurve: 'P-256' }; break
    case 'ES384': algorithm = { name: 'ECDSA', namedCurve: 'P-384' }; break
    case 'RS256': algorithm = { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }; break
    case 'EdDSA': algorithm = { name: 'Ed25519' }; break
    default: throw new Error(`unsupported alg ${alg}`)
  }
  for (const k of ['kid', 'alg', 'use', 'key_ops', 'ext']) delete jwk[k]
  const key = await crypto.subtle.importKey('jwk', jwk, algorithm, false, ['sign'])
  return { key, kid }
}

// importPEM imports a PKCS#8 PEM private key ("PRIVATE KEY", what
// `openssl genpkey` writes) for alg; WebCrypto refuses SEC1 ("EC PRIVATE
// KEY") and PKCS#1 ("RSA PRIVATE KEY").
async function importPEM(file, alg) {
  const pem = await readFile(file, 'utf8')
  const b64 = pem.replace(/-----(BEGIN|END) PRIVATE KEY-----/g, '').replace(/\s+/g, '')
  const algorithm = {
    ES256: { name: 'ECDSA', namedCurve: 'P-256' },
    ES384: { name: 'ECDSA', namedCurve: 'P-384' },
    RS256: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' },
    EdDSA: { name: 'Ed25519' },
  }[alg]
  if (!algorithm) throw new Error(`unsupported alg ${alg}`)
  const key = await crypto.subtle.importKey('pkcs8', Buffer.from(b64, 'base64'), algorithm, false, ['sign'])
  return { key }
}

async function clientAuth(c, file) {
  switch (c.auth) {
    case 'private_key_jwt': return oauth.PrivateKeyJwt(c.pem_file && !file ? await importPEM(c.pem_file, c.alg) : await importJWK(file ?? c.jwk_file))
    case 'client_secret_basic': return oauth.ClientSecretBasic(c.client_secret)
    case 'client_secret_post': return oauth.ClientSecretPost(c.client_secret)
    default: throw new Error(`unsupported auth ${c.auth}`)
  }
}

// me calls GET /api/v1/me/. oauth4webapi throws on a 401 with a
// WWW-Authenticate challenge; the challenge it parsed is printed too.
async function me(api, token) {
  let resp
  let challenges = null
  try {
    resp = await oauth.protectedResourceRequest(token, 'GET', new URL('/api/v1/me/', api), undefined, undefined, insecure)
  } catch (err) {
    if (!(err instanceof oauth.WWWAuthenticateChallengeError)) throw err
    resp = err.response
    challenges = err.cause
  }
  const text = await resp.text()
  return {
    status: resp.status,
    challenges,
    www_authenticate: resp.headers.get('www-authenticate'),
    cache_control: resp.headers.get('cache-control'),
    body: text === '' ? null : JSON.parse(text),
  }
}

// sent is the client_assertion of the last token request.
let sent = null
const capture = {
  ...insecure,
  [oauth.customFetch]: (url, options) => {
    sent = new URLSearchParams(options.body).get('client_assertion')
    return fetch(url, options)
  },
}

function decoded(part) {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
}

async function token(as, client, auth) {
  const resp = await oauth.clientCredentialsGrantRequest(as, client, auth, {}, capture)
  return oauth.processClientCredentialsResponse(as, client, resp)
}

async function run(config) {
  const issuer = new URL(config.issuer)
  let started = performance.now()
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }))
  out({
    step: 'discovery', issuer: as.issuer, token_endpoint: as.token_endpoint, revocation_endpoint: as.revocation_endpoint,
    token_endpoint_auth_methods_supported: as.token_endpoint_auth_methods_supported,
    ms: Math.round(performance.now() - started),
  })
  for (const c of config.clients) {
    started = performance.now()
    const client = { client_id: c.client_id }
    const auth = await clientAuth(c)
    const tok = await token(as, client, auth)
    if (c.auth === 'private_key_jwt') {
      const [h, p] = sent.split('.')
      const header = decoded(h), payload = decoded(p)
      out({ client: c.name, step: 'assertion', alg: header.alg, kid: header.kid ?? null, lifetime: payload.exp - payload.iat })
    }
    out({ client: c.name, step: 'token', token_type: tok.token_type, expires_in: tok.expires_in, scope: tok.scope, access_token: tok.access_token })
    out({ client: c.name, step: 'me', ...(await me(config.api, tok.access_token)) })

    const resp = await oauth.revocationRequest(as, client, auth, tok.access_token, insecure)
    const status = resp.status
    const cacheControl = resp.headers.get('cache-control')
    await oauth.processRevocationResponse(resp)
    out({ client: c.name, step: 'revoke', status, cache_control: cacheControl })
    out({ client: c.name, step: 'me_after_revoke', ...(await me(config.api, tok.access_token)) })

    // The client lives on: a new token works.
    const again = await token(as, client, auth)
    out({ client: c.name, step: 'me_new_token', status: (await me(config.api, again.access_token)).status, new_token: again.access_token !== tok.access_token })

    if (c.wrong_jwk_file) {
      try {
        await token(as, client, await clientAuth(c, c.wrong_jwk_file))
        out({ client: c.name, step: 'token_wrong_key', accepted: true })
      } catch (err) {
        if (!(err instanceof oauth.ResponseBodyError)) throw err
        out({ client: c.name, step: 'token_wrong_key', status: err.status, error: err.error, error_description: err.error_description })
      }
    }
    out({ client: c.name, step: 'done', ms: Math.round(performance.now() - started) })
  }
}

// runDPoP is the DPoP flow (RFC 9449) of each client with oauth4webapi's
// DPoP handle, one new ES256 key pair per client: a token request with a
// proof, GET /api/v1/me/ twice with proofs. A use_dpop_nonce refusal is
// retried once, as oauth4webapi documents (isDPoPNonceError; the handle
// keeps the DPoP-Nonce it was sent), and the retries are counted.
async function runDPoP(config) {
  const issuer = new URL(config.issuer)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }))
  out({ step: 'discovery', dpop_signing_alg_values_supported: as.dpop_signing_alg_values_supported })
  for (const c of config.clients) {
    const client = { client_id: c.client_id }
    const auth = await clientAuth(c)
    const keyPair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign', 'verify'])
    const DPoP = oauth.DPoP(client, keyPair)
    let retries = 0
    const once = async (fn) => {
      try {
        return await fn()
      } catch (err) {
        if (!oauth.isDPoPNonceError(err)) throw err
        retries++
        return fn()
      }
    }
    const tok = await once(async () => oauth.processClientCredentialsResponse(as, client,
      await oauth.clientCredentialsGrantRequest(as, client, auth, {}, { ...insecure, DPoP })))
    out({ client: c.name, step: 'dpop_token', token_type: tok.token_type, expires_in: tok.expires_in, scope: tok.scope, nonce_retries: retries })
    for (const step of ['dpop_me', 'dpop_me_again']) {
      retries = 0
      const resp = await once(() => oauth.protectedResourceRequest(tok.access_token, 'GET', new URL('/api/v1/me/', config.api), undefined, undefined, { ...insecure, DPoP }))
      const body = await resp.json()
      out({ client: c.name, step, status: resp.status, client_id: body.client_id, nonce: resp.headers.has('dpop-nonce'), nonce_retries: retries })
    }
  }
}

try {
  const config = JSON.parse(await readFile(process.argv[2], 'utf8'))
  await (config.dpop ? runDPoP(config) : run(config))
} catch (err) {
  out({ step: 'failed', error: String(err), code: err?.code, cause: err?.cause ?? null })
  process.exit(1)
}
