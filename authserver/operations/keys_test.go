package operations_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/redisconn"
	"github.com/partnerapi/authplatform/pkg/signingkeys"
)

// keySet is a replica's keys in force: its signing kid and published kids.
type keySet struct {
	signing   string
	published []string
}

func (k keySet) SigningKeyID() string      { return k.signing }
func (k keySet) PublishedKeyIDs() []string { return k.published }

// The doors' key sources are operations.Keys.
var (
	_ operations.Keys = (*signingkeys.Authority)(nil)
	_ operations.Keys = operations.KeyFile{}
)

// keyFile writes a key set file of n fresh keys, the first signing.
func keyFile(t *testing.T, n int) operations.KeyFile {
	t.Helper()
	ks, err := accesstoken.NewKeySet(newKey(t))
	if err != nil {
		t.Fatal(err)
	}
	for range n - 1 {
		if ks, err = ks.Staged(newKey(t)); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := ks.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	return operations.KeyFile{Path: path, Keys: ks}
}

func newKey(t *testing.T) jwk.Key {
	t.Helper()
	k, err := accesstoken.GenerateKey(accesstoken.AlgEdDSA)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The one rule of a withdrawal, at both doors: a published key, never the
// signing key; a refused withdrawal records nothing.
func TestWithdrawKey(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	keys := keySet{signing: "k1", published: []string{"k1", "k2", "k3"}}
	_, err := f.ops.WithdrawKey(f.ctx, "k1", keys)
	wantErr(t, "withdrawing the signing key", err,
		"invalid input: the signing key cannot be withdrawn: make another key the signing key first ('keys generate --rotate' or 'keys promote')",
		operations.ErrSigningKey, operations.ErrInvalid)
	_, err = f.ops.WithdrawKey(f.ctx, "k9", keys)
	wantErr(t, "withdrawing an unpublished key", err, `key "k9": not found`, clients.ErrNotFound)
	_, err = f.ops.WithdrawKey(f.ctx, "", keys)
	wantErr(t, "withdrawing no key", err, "invalid input: a key id is required", operations.ErrInvalid)
	if kids, err := f.ops.Withdrawn(f.ctx); err != nil || len(kids) != 0 {
		t.Fatalf("refused withdrawals withdrew %v (%v)", kids, err)
	}

	v, err := f.ops.WithdrawKey(f.ctx, "k3", keys)
	if err != nil || v != 1 {
		t.Fatalf("WithdrawKey k3: version %d, %v", v, err)
	}
	// Again (harmless): the version moves on.
	if v, err = f.ops.WithdrawKey(f.ctx, "k3", keys); err != nil || v != 2 {
		t.Errorf("WithdrawKey k3 again: version %d, %v", v, err)
	}
	if v, err = f.ops.WithdrawKey(f.ctx, "k2", keys); err != nil || v != 3 {
		t.Errorf("WithdrawKey k2: version %d, %v", v, err)
	}
	if kids, err := f.ops.Withdrawn(f.ctx); err != nil || !slices.Equal(kids, []string{"k2", "k3"}) {
		t.Errorf("Withdrawn: %v %v", kids, err)
	}
	// What every server's watcher reads.
	if st, err := f.withdrawals.Read(f.ctx); err != nil || st.Version != 3 || !st.Withdrawn("k2") || !st.Withdrawn("k3") || st.Withdrawn("k1") {
		t.Errorf("the withdrawal state in Redis: %+v %v", st, err)
	}

	none := &operations.Service{Registry: f.store}
	if _, err := none.WithdrawKey(f.ctx, "k2", keys); err == nil {
		t.Error("WithdrawKey without a withdrawal store: no error")
	}
	if _, err := none.WithdrawKey(f.ctx, "k1", keys); !errors.Is(err, operations.ErrSigningKey) {
		t.Errorf("the rule comes before the store: %v", err)
	}
}

// The command line's withdrawal: Redis, then the file rewritten without
// the key; the signing key and an unknown key refused with the file as it
// was; a file that cannot be rewritten reported with the version recorded.
func TestWithdrawFromFile(t *testing.T) {
	f := newFixture(t, redisconn.Confirmation{})
	file := keyFile(t, 3)
	kids := file.Keys.KeyIDs()
	signing := file.Keys.SigningKeyID()
	if signing != kids[0] {
		t.Fatalf("signing %s, kids %v", signing, kids)
	}
	before, err := os.ReadFile(file.Path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.ops.WithdrawFromFile(f.ctx, file, signing)
	wantErr(t, "withdrawing the file's signing key", err, "", operations.ErrSigningKey, operations.ErrInvalid)
	_, err = f.ops.WithdrawFromFile(f.ctx, file, "not-in-the-file")
	wantErr(t, "withdrawing a key the file lacks", err, `key "not-in-the-file": not found`, clients.ErrNotFound)
	if after, _ := os.ReadFile(file.Path); !bytes.Equal(after, before) {
		t.Error("a refused withdrawal rewrote the file")
	}
	if w, err := f.ops.Withdrawn(f.ctx); err != nil || len(w) != 0 {
		t.Fatalf("refused withdrawals withdrew %v (%v)", w, err)
	}

	w, err := f.ops.WithdrawFromFile(f.ctx, file, kids[2])
	if err != nil || w.Version != 1 || w.Keys == nil || !slices.Equal(w.Keys.KeyIDs(), []string{kids[0], kids[1]}) || w.Keys.SigningKeyID() != signing {
		t.Fatalf("WithdrawFromFile: %+v %v", w, err)
	}
	reread, err := accesstoken.LoadKeySet(file.Path)
	if err != nil || !slices.Equal(reread.KeyIDs(), []string{kids[0], kids[1]}) || reread.SigningKeyID() != signing {
		t.Errorf("the file after the withdrawal: %v %v", reread.KeyIDs(), err)
	}
	if got, err := f.ops.Withdrawn(f.ctx); err != nil || !slices.Equal(got, []string{kids[2]}) {
		t.Errorf("Withdrawn: %v %v", got, err)
	}

	// The file gone from under the command: withdrawn in Redis all the
	// same (version 2), reported, and no keys given back.
	gone := operations.KeyFile{Path: filepath.Join(t.TempDir(), "gone", "keys.json"), Keys: reread}
	w, err = f.ops.WithdrawFromFile(f.ctx, gone, kids[1])
	if err == nil || w.Version != 2 || w.Keys != nil ||
		!strings.HasPrefix(err.Error(), "withdrawn in Redis, but "+gone.Path+" was not rewritten: ") {
		t.Errorf("a file that cannot be rewritten: %+v %v", w, err)
	}
	if got, err := f.ops.Withdrawn(f.ctx); err != nil || !slices.Equal(got, sorted(kids[1], kids[2])) {
		t.Errorf("Withdrawn: %v %v", got, err)
	}
}

// sorted is s in order, as Withdrawn lists the kids.
func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}
