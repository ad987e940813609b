package partnerclient_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

// A private key made by the authentication guide's openssl recipe (PKCS #8
// PEM, `openssl genpkey`; SEC 1 and PKCS #1 PEM load too) and the kid
// registered for its public key.
func ExampleParsePrivateKeyPEM() {
	data, err := os.ReadFile("key.pem") // -----BEGIN PRIVATE KEY-----
	if err != nil {
		log.Fatal(err)
	}
	key, err := partnerclient.ParsePrivateKeyPEM(data)
	if err != nil {
		log.Fatal(err)
	}
	c, err := partnerclient.New(partnerclient.Config{
		BaseURL:    "https://api.example.com",
		ClientID:   os.Getenv("PARTNER_CLIENT_ID"),
		PrivateKey: key.Key,
		KeyID:      os.Getenv("PARTNER_KEY_ID"), // the "kid" in the JWK set you registered
		Algorithm:  key.Algorithm,               // ES256 for a P-256 key
	})
	if err != nil {
		log.Fatal(err)
	}
	me, err := c.Me(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(me.ClientID)
}
