"""The Python client of deploy/e2e/clients: Authlib (Debian's python3-authlib)
against the real token service and resource server.

It is given a JSON file:

  {"issuer": URL, "api": URL, "clients": [CLIENT...]}
  CLIENT: {"name": N, "client_id": ID, "auth": "private_key_jwt", "alg": A,
           "jwk_file": F | "pem_file": F, "wrong_jwk_file": F}
        | {"name": N, "client_id": ID, "auth": "client_secret_post", "client_secret": S}

and prints one JSON object a line for each step (the Go test asserts on
them): the metadata, then for each client a token (client_credentials,
OAuth2Session.fetch_token), GET /api/v1/me/ with the session, the token's
revocation (RFC 7009, OAuth2Session.revoke_token), GET /api/v1/me/ again
(401), a new token, and for a key client a token request signed with a key
the server does not know, and a revocation with Authlib's default audience
for it (the revocation endpoint's URL). A key client's key is a private JWK
(jwk_file; Authlib puts its "kid" in the header) or a PKCS#8 PEM file as the
authentication guide's openssl recipe makes it (pem_file; Authlib signs
without "kid"); Authlib's PrivateKeyJWT is used as it comes (exp = iat +
3600), and the header and lifetime it signs are printed (step "assertion").
It exits 1 on the first unexpected failure, after printing it.

Run it with /usr/bin/python3: Authlib and requests come from Debian.
"""

import base64
import json
import sys
import time

import authlib
import requests
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc7523 import PrivateKeyJWT, private_key_jwt_sign


def _b64(part):
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def out(**obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def me(session, api, name, step):
    resp = session.get(api + "/api/v1/me/")
    out(client=name, step=step, status=resp.status_code,
        www_authenticate=resp.headers.get("WWW-Authenticate"),
        cache_control=resp.headers.get("Cache-Control"),
        body=resp.json() if resp.content else None)


def private_key(c, jwk_file=None):
    """The client's private key as Authlib takes it: a JWK dict, or PEM text."""
    if jwk_file or c.get("jwk_file"):
        return load(jwk_file or c["jwk_file"])
    with open(c["pem_file"], encoding="utf-8") as f:
        return f.read()


def session_for(c, meta, jwk_file=None):
    """An OAuth2Session authenticating as c, to the token and the revocation endpoint."""
    token_endpoint = meta["token_endpoint"]
    if c["auth"] == "private_key_jwt":
        key = private_key(c, jwk_file)
        s = OAuth2Session(c["client_id"], key,
                          token_endpoint_auth_method="private_key_jwt",
                          revocation_endpoint_auth_method="private_key_jwt",
                          token_endpoint=token_endpoint, grant_type="client_credentials")
        # As Authlib's documentation registers it; aud = the token endpoint
        # URL, for token and revocation requests alike.
        kwargs = {"alg": c["alg"]} if c.get("alg") else {}
        s.register_client_auth_method(PrivateKeyJWT(token_endpoint, **kwargs))
        return s
    return OAuth2Session(c["client_id"], c["client_secret"],
                         token_endpoint_auth_method=c["auth"],
                         revocation_endpoint_auth_method=c["auth"],
                         token_endpoint=token_endpoint, grant_type="client_credentials")


def run(config):
    started = time.monotonic()
    resp = requests.get(config["issuer"] + "/.well-known/oauth-authorization-server", timeout=5)
    resp.raise_for_status()
    meta = resp.json()
    if meta["issuer"] != config["issuer"]:
        raise ValueError("metadata issuer %r, want %r" % (meta["issuer"], config["issuer"]))
    out(step="discovery", authlib=authlib.__version__, requests=requests.__version__,
        issuer=meta["issuer"], token_endpoint=meta["token_endpoint"],
        revocation_endpoint=meta["revocation_endpoint"],
        ms=round((time.monotonic() - started) * 1000))
    api, name = config["api"], None
    for c in config["clients"]:
        started = time.monotonic()
        name = c["name"]
        s = session_for(c, meta)
        if c["auth"] == "private_key_jwt":
            # What PrivateKeyJWT signs by default (it calls this function
            # with the same arguments and no expires_in).
            a = private_key_jwt_sign(private_key(c), client_id=c["client_id"],
                                     token_endpoint=meta["token_endpoint"], alg=c.get("alg") or "RS256")
            a = a.decode() if isinstance(a, bytes) else a
            header = json.loads(_b64(a.split(".")[0]))
            payload = json.loads(_b64(a.split(".")[1]))
            out(client=name, step="assertion", alg=header.get("alg"), kid=header.get("kid"),
                lifetime=payload["exp"] - payload["iat"])
        tok = s.fetch_token(meta["token_endpoint"], grant_type="client_credentials")
        out(client=name, step="token", token_type=tok["token_type"], expires_in=tok["expires_in"],
            scope=tok["scope"], access_token=tok["access_token"])
        me(s, api, name, "me")

        resp = s.revoke_token(meta["revocation_endpoint"], token=tok["access_token"])
        out(client=name, step="revoke", status=resp.status_code,
            cache_control=resp.headers.get("Cache-Control"), body=resp.text)
        me(s, api, name, "me_after_revoke")

        again = s.fetch_token(meta["token_endpoint"], grant_type="client_credentials")
        resp = s.get(api + "/api/v1/me/")
        out(client=name, step="me_new_token", status=resp.status_code,
            new_token=again["access_token"] != tok["access_token"])

        if c.get("wrong_jwk_file"):
            try:
                session_for(c, meta, c["wrong_jwk_file"]).fetch_token(
                    meta["token_endpoint"], grant_type="client_credentials")
                out(client=name, step="token_wrong_key", accepted=True)
            except OAuthError as err:
                out(client=name, step="token_wrong_key", error=err.error, error_description=err.description)
            # PrivateKeyJWT registered without a token endpoint signs each
            # request's own URL as "aud": the revocation endpoint's here.
            d = OAuth2Session(c["client_id"], load(c["jwk_file"]),
                              token_endpoint_auth_method="private_key_jwt",
                              revocation_endpoint_auth_method="private_key_jwt")
            d.register_client_auth_method(PrivateKeyJWT(**({"alg": c["alg"]} if c.get("alg") else {})))
            resp = d.revoke_token(meta["revocation_endpoint"], token=again["access_token"])
            out(client=name, step="revoke_aud_revocation_url", status=resp.status_code, body=resp.json())
        out(client=name, step="done", ms=round((time.monotonic() - started) * 1000))


def main():
    try:
        run(load(sys.argv[1]))
    except Exception as err:  # printed for the Go test, then exit 1
        out(step="failed", error="%s: %s" % (type(err).__name__, err))
        sys.exit(1)


if __name__ == "__main__":
    main()
