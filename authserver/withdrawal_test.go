package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
	"github.com/partnerapi/authplatform/pkg/testwait"
)

// TestWithdrawalReachesAuthority: a withdrawal recorded in Redis (as `keys
// withdraw` and the admin API record it) reaches the serve command's
// signing-key authority through its watcher: the kid is no longer
// published and the verifier over the authority refuses its token, cached
// verification included; the key file's signing key still signs.
func TestWithdrawalReachesAuthority(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	const iss, aud = "https://issuer.withdrawal.test", "partner-api"
	k1, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	k2, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	loaded, err := accesstoken.NewKeySet(k1, k2)
	if err != nil {
		t.Fatal(err)
	}
	signing, other := loaded.KeyIDs()[0], loaded.KeyIDs()[1]
	file := filepath.Join(t.TempDir(), "jwks.json")
	if err := loaded.WriteFile(file); err != nil {
		t.Fatal(err)
	}
	authority, err := signingkeys.New(loaded, iss, aud)
	if err != nil {
		t.Fatal(err)
	}
	w := watchWithdrawals(context.Background(), rdb, prefix, file, loaded, authority, slog.New(slog.DiscardHandler))
	defer w.Close()
	verifier := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(authority, iss, aud, nil), 0, nil)

	promoted, _ := loaded.Promoted(other)
	otherIssuer, _ := accesstoken.NewIssuer(promoted, iss, aud)
	tok, _, err := otherIssuer.Issue(accesstoken.Grant{ClientID: "svc_aaaaaaaaaaaaaaaaaaaaaaaa", Generation: 1, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifier.Verify(tok); err != nil { // cached now
		t.Fatal(err)
	}

	// As `keys withdraw`: Redis first, then the file.
	if _, err := keywithdrawal.NewStore(rdb, prefix).Withdraw(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	next, _ := loaded.Without(other)
	if err := next.WriteFile(file); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, "the withdrawal reached the authority", func() bool { return authority.Withdrawn(other) })
	if _, err := verifier.Verify(tok); !errors.Is(err, accesstoken.ErrWithdrawnKey) {
		t.Errorf("token of the withdrawn key: %v, want ErrWithdrawnKey", err)
	}
	if got := authority.PublishedKeyIDs(); !slices.Equal(got, []string{signing}) || authority.SigningKeyID() != signing || authority.Issuer() == nil {
		t.Errorf("published %v, signing %q; want only %s, signing", got, authority.SigningKeyID(), signing)
	}
}
