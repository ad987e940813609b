package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

// TestKeysWithdraw: `keys withdraw` through operations. The signing key
// and a kid the file lacks are usage errors (exit 2) decided before Redis
// is reached, the file untouched; a withdrawal is recorded in Redis and
// the file rewritten without the key; one no replica confirmed exits 3
// with the file rewritten all the same.
func TestKeysWithdraw(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "keys.json")
	for _, args := range [][]string{{"--out", file}, {"--out", file, "--stage"}, {"--out", file, "--stage"}} {
		if _, stderr, code := execAuthserver(t, nil, append([]string{"keys", "generate"}, args...)...); code != 0 {
			t.Fatalf("keys generate %v: exit %d: %s", args, code, stderr)
		}
	}
	ks, err := accesstoken.LoadKeySet(file)
	if err != nil {
		t.Fatal(err)
	}
	kids, signing := ks.KeyIDs(), ks.SigningKeyID()
	before, _ := os.ReadFile(file)

	dead := map[string]string{"REDIS_URL": "redis://127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/0"}
	for _, tc := range []struct{ kid, stderr string }{
		{signing, "authserver: the signing key cannot be withdrawn: make another key the signing key first ('keys generate --rotate' or 'keys promote')\n"},
		{"nope", `authserver: no key with kid "nope" in the set` + "\n"},
	} {
		stdout, stderr, code := execAuthserver(t, dead, "keys", "withdraw", "--file", file, "--", tc.kid)
		if code != 2 || stdout != "" || stderr != tc.stderr {
			t.Errorf("keys withdraw %s: exit %d, stdout %q\nstderr %q\nwant   %q", tc.kid, code, stdout, stderr, tc.stderr)
		}
	}
	if after, _ := os.ReadFile(file); !bytes.Equal(after, before) {
		t.Error("a refused withdrawal rewrote the file")
	}

	rdb := redistest.Client(t)
	prefix := redistest.Prefix(t, rdb)
	env := map[string]string{"REDIS_URL": redistest.URL(), "REDIS_KEY_PREFIX": prefix}
	stdout, stderr, code := execAuthserver(t, env, "keys", "withdraw", "--file", file, "--json", "--", kids[2])
	want := `{"file":"` + file + `","kids":["` + kids[0] + `","` + kids[1] + `"],"signing_kid":"` + signing + `","version":1,"withdrawn":"` + kids[2] + `"}` + "\n"
	if code != 0 || stdout != want || stderr != "" {
		t.Fatalf("keys withdraw: exit %d\nstdout %s\nwant   %s\nstderr %s", code, stdout, want, stderr)
	}
	if st, err := keywithdrawal.NewStore(rdb, prefix).Read(context.Background()); err != nil || st.Version != 1 || !st.Withdrawn(kids[2]) {
		t.Errorf("withdrawal in Redis: %+v %v", st, err)
	}

	sep := "?"
	if strings.Contains(redistest.URL(), "?") {
		sep = "&"
	}
	env["REDIS_URL"] = redistest.URL() + sep + "confirm_replicas=2&confirm_timeout=50ms"
	stdout, stderr, code = execAuthserver(t, env, "keys", "withdraw", "--file", file, "--", kids[1])
	if code != 3 || stdout != "" || !strings.Contains(stderr, "no replica confirmed the withdrawal") {
		t.Errorf("unconfirmed keys withdraw: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	if ks, err := accesstoken.LoadKeySet(file); err != nil || !slices.Equal(ks.KeyIDs(), []string{signing}) {
		t.Errorf("the file after an unconfirmed withdrawal: %v %v", ks, err)
	}
}
