package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
	"github.com/partnerapi/authplatform/pkg/redisconn"
)

const keysUsage = "usage: authserver keys generate --out FILE [--alg EdDSA|ES256] [--rotate [--keep N] | --stage] | authserver keys promote --file FILE KID | authserver keys withdraw --file FILE KID | authserver keys list --file FILE"

// keysCommand manages the signing key set file. A zero-downtime key
// rotation is: `keys generate --stage` (publish the new key; restart or
// wait for the resource servers' JWKS refresh), then `keys promote KID`
// (sign with it); `--rotate` does both at once.
func keysCommand(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usagef("%s", keysUsage)
	}
	switch args[0] {
	case "generate":
		return keysGenerate(args[1:], stdout)
	case "promote", "list":
		return keysEdit(args[0], args[1:], stdout)
	}
	return usagef("%s", keysUsage)
}

func keysGenerate(args []string, stdout io.Writer) error {
	fl := newFlags("keys generate")
	out := fl.String("out", "", "key set file to write")
	alg := fl.String("alg", accesstoken.AlgEdDSA, "EdDSA or ES256")
	rotate := fl.Bool("rotate", false, "add a new signing key in front of an existing file's keys")
	stage := fl.Bool("stage", false, "publish a new key in an existing file without signing with it yet")
	keep := fl.Int("keep", 2, "with --rotate: earlier keys kept for verification")
	asJSON := fl.Bool("json", false, "machine-readable output")
	if pos, err := parseFlags(fl, args); err != nil {
		return err
	} else if len(pos) > 0 || *out == "" {
		return usagef("keys generate needs --out FILE and no arguments")
	}
	if *keep < 0 || (*rotate && *stage) {
		return usagef("--keep must not be negative, and --rotate and --stage exclude each other")
	}
	key, err := accesstoken.GenerateKey(*alg)
	if err != nil {
		return usageError{err.Error()}
	}
	var ks *accesstoken.KeySet
	existing, err := accesstoken.LoadKeySet(*out)
	switch {
	case err == nil && *rotate:
		ks, err = existing.Rotated(key, *keep)
	case err == nil && *stage:
		ks, err = existing.Staged(key)
	case err == nil:
		return fmt.Errorf("%s exists: pass --rotate or --stage to add a new key to it", *out)
	case errors.Is(err, fs.ErrNotExist) && !*stage:
		ks, err = accesstoken.NewKeySet(key)
	default:
		return err
	}
	if err != nil {
		return err
	}
	if err := ks.WriteFile(*out); err != nil {
		return err
	}
	kid, _ := key.KeyID()
	return printKeys(stdout, *asJSON, *out, ks, fmt.Sprintf("new key %s (%s)", kid, *alg))
}

func keysEdit(sub string, args []string, stdout io.Writer) error {
	fl := newFlags("keys " + sub)
	file := fl.String("file", "", "key set file")
	asJSON := fl.Bool("json", false, "machine-readable output")
	pos, err := parseFlags(fl, args)
	if err != nil {
		return err
	}
	want := map[string]int{"promote": 1, "list": 0}[sub]
	if *file == "" || len(pos) != want {
		return usagef("%s", keysUsage)
	}
	ks, err := accesstoken.LoadKeySet(*file)
	if err != nil {
		return err
	}
	if sub == "list" {
		return printKeys(stdout, *asJSON, *file, ks, "")
	}
	if ks, err = ks.Promoted(pos[0]); err != nil {
		return usageError{err.Error()}
	}
	if err := ks.WriteFile(*file); err != nil {
		return err
	}
	return printKeys(stdout, *asJSON, *file, ks, "promoted "+pos[0])
}

func printKeys(w io.Writer, asJSON bool, file string, ks *accesstoken.KeySet, what string) error {
	if asJSON {
		return json.NewEncoder(w).Encode(map[string]any{"file": file, "signing_kid": ks.SigningKeyID(), "kids": ks.KeyIDs()})
	}
	if what != "" {
		fmt.Fprintf(w, "%s: %s\n", file, what)
	}
	fmt.Fprintf(w, "signing key: %s\npublished:   %v\n", ks.SigningKeyID(), ks.KeyIDs())
	return nil
}

const withdrawUsage = "usage: authserver keys withdraw --file FILE [--json] [--] KID"

// keysWithdraw withdraws a published key at once, everywhere: it removes
// the key from the key set file (refusing the signing key: promote or
// generate another first) and records the withdrawal in Redis, which
// every token service replica and resource server watches
// (pkg/keywithdrawal): within seconds they stop publishing the key, refuse
// its tokens (cached ones included) and fetch the JWKS again. Token
// service replicas reload the file on the same notice.
func keysWithdraw(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fl := newFlags("keys withdraw")
	file := fl.String("file", "", "key set file")
	asJSON := fl.Bool("json", false, "machine-readable output")
	pos, err := parseFlags(fl, args)
	if err != nil {
		return err
	}
	if *file == "" || len(pos) != 1 {
		return usagef("%s", withdrawUsage)
	}
	kid := pos[0]
	ks, err := accesstoken.LoadKeySet(*file)
	if err != nil {
		return err
	}
	next, err := ks.Without(kid)
	if err != nil {
		return usageError{err.Error()}
	}
	confirm, err := redisconn.ConfirmationOf(getenv("REDIS_URL"))
	if err != nil {
		return usageError{err.Error()}
	}
	rdb, err := redisconn.Open(getenv("REDIS_URL"))
	if err != nil {
		return usageError{err.Error()}
	}
	defer rdb.Close()
	// Redis first: if it fails, the file still holds the key and the
	// command can be run again.
	store := keywithdrawal.NewStore(rdb, getenv("REDIS_KEY_PREFIX"))
	store.ConfirmWrites(confirm)
	version, err := store.Withdraw(ctx, kid)
	if err != nil && version == 0 {
		return err
	}
	if werr := next.WriteFile(*file); werr != nil {
		return fmt.Errorf("withdrawn in Redis, but %s was not rewritten: %w", *file, werr)
	}
	if errors.Is(err, keywithdrawal.ErrNotReplicated) {
		// Exit 3 like every operator change a failover could undo.
		return fmt.Errorf("%w: %w", clients.ErrNotReplicated, err)
	}
	if err != nil { // recorded, but not published: servers see it at their next poll
		fmt.Fprintf(stdout, "warning: %v\n", err)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"file": *file, "withdrawn": kid, "version": version, "signing_kid": next.SigningKeyID(), "kids": next.KeyIDs()})
	}
	fmt.Fprintf(stdout, "%s: withdrew %s (every server refuses its tokens within seconds)\n", *file, kid)
	fmt.Fprintf(stdout, "signing key: %s\npublished:   %v\n", next.SigningKeyID(), next.KeyIDs())
	return nil
}
