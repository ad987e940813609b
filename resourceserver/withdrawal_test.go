package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redistest"
	"github.com/partnerapi/authplatform/pkg/testwait"
	"github.com/partnerapi/authplatform/resourceserver/jwks"
)

// TestKeyAuthorityWithdrawal: the resource server's key authority (the
// JWKS cache plus the withdrawal watcher) makes the verifier refuse a
// withdrawn key's token, its cached verification included, as soon as the
// notice arrives, while the fetched JWKS still lists the key; the other
// key's tokens live on, and the notice makes the JWKS be fetched again.
func TestKeyAuthorityWithdrawal(t *testing.T) {
	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	k1, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	k2, _ := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	ks, err := accesstoken.NewKeySet(k1, k2)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := ks.PublicJSON()
	if err != nil {
		t.Fatal(err)
	}
	var fetches atomic.Int32
	// The token service's JWKS, still listing both keys (as a replica that
	// has not reloaded its key file would).
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src, err := jwks.New(ctx, srv.URL, jwks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close(context.Background()) }()
	logger := slog.New(slog.DiscardHandler)
	w := watchWithdrawals(ctx, rdb, prefix, src, logger)
	defer w.Close()
	keys := keyAuthority{jwks: src, withdrawals: w}
	v := accesstoken.NewCachingVerifier(accesstoken.NewVerifier(keys, "iss", "aud", nil), 0, nil)

	issue := func(ks *accesstoken.KeySet) string {
		iss, _ := accesstoken.NewIssuer(ks, "iss", "aud")
		tok, _, err := iss.Issue(accesstoken.Grant{ClientID: "svc_aaaaaaaaaaaaaaaaaaaaaaaa", Generation: 1, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	other, _ := ks.Promoted(ks.KeyIDs()[1])
	tok, otherTok := issue(ks), issue(other)
	testwait.Eventually(t, 5*time.Second, "the JWKS fetched", src.Ready)
	for _, tk := range []string{tok, otherTok} {
		if _, err := v.Verify(tk); err != nil { // cached now
			t.Fatal(err)
		}
	}
	before := fetches.Load()
	if _, err := keywithdrawal.NewStore(rdb, prefix).Withdraw(context.Background(), ks.KeyIDs()[0]); err != nil {
		t.Fatal(err)
	}
	testwait.Eventually(t, 5*time.Second, "the withdrawn key's token refused with ErrWithdrawnKey", func() bool {
		_, err := v.Verify(tok)
		if err != nil && !errors.Is(err, accesstoken.ErrWithdrawnKey) {
			t.Fatalf("token of the withdrawn key: %v, want ErrWithdrawnKey", err)
		}
		return err != nil
	})
	if _, err := v.Verify(otherTok); err != nil {
		t.Errorf("the other key's token: %v", err)
	}
	testwait.Eventually(t, 5*time.Second, "the notice made the JWKS be fetched again", func() bool { return fetches.Load() != before })
}
