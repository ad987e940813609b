"""Authlib's requests OAuth2Session as a mutual-TLS client (RFC 8705).

Usage: client.py TOKEN_URL API_URL CLIENT_ID CERT KEY CA

The client authenticates with its TLS client certificate (requests'
cert=), sending client_id alone (Authlib's token_endpoint_auth_method
"none"), then calls API_URL over a session presenting the same
certificate. It prints the API's status and body as one JSON line.
"""
import json
import sys

from authlib.integrations.requests_client import OAuth2Session


def main():
    token_url, api_url, client_id, cert, key, ca = sys.argv[1:7]
    session = OAuth2Session(client_id, token_endpoint_auth_method="none")
    session.cert = (cert, key)
    session.verify = ca
    # requests lets REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE, when set, win
    # over session.verify (psf/requests#3829): the test's CA must win.
    session.trust_env = False
    token = session.fetch_token(token_url, grant_type="client_credentials")
    resp = session.get(api_url)
    print(json.dumps({"token_type": token["token_type"], "status": resp.status_code, "body": resp.json()}))


if __name__ == "__main__":
    main()
