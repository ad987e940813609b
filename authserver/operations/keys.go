package operations

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// ErrSigningKey refuses to withdraw the key that signs: promote or rotate
// to another first. It is bad input (errors.Is(err, ErrInvalid) holds),
// returned as it is.
var ErrSigningKey error = clients.Invalidf("the signing key cannot be withdrawn: make another key the signing key first ('keys generate --rotate' or 'keys promote')")

// Keys are the signing keys in force where an operator withdraws one: the
// serving replica's key authority at the admin API
// (signingkeys.Authority), the key set file at the command line (KeyFile).
type Keys interface {
	SigningKeyID() string
	PublishedKeyIDs() []string
}

// CheckWithdrawal is the one rule of a key withdrawal, at both doors: kid
// is a key keys publish (else clients.ErrNotFound), and not the one that
// signs (ErrSigningKey, with ErrInvalid).
func CheckWithdrawal(kid string, keys Keys) error {
	switch {
	case kid == "":
		return clients.Invalidf("a key id is required")
	case !slices.Contains(keys.PublishedKeyIDs(), kid):
		return clients.NotFoundf("key %q", kid)
	case kid == keys.SigningKeyID():
		return ErrSigningKey
	}
	return nil
}

// WithdrawKey withdraws kid, a key of keys but not their signing key
// (CheckWithdrawal), on every server (package keywithdrawal). It returns
// the withdrawal's version; a version with an error is a withdrawal
// recorded but not confirmed by the replicas (keywithdrawal.ErrNotReplicated)
// or not announced (the servers see it at their next poll).
func (s *Service) WithdrawKey(ctx context.Context, kid string, keys Keys) (int64, error) {
	if err := CheckWithdrawal(kid, keys); err != nil {
		return 0, err
	}
	if s.Withdrawals == nil {
		return 0, errors.New("operations: no withdrawal store")
	}
	return s.Withdrawals.Withdraw(ctx, kid)
}

// KeyFile is a signing key set file (`authserver keys`) as loaded: the
// keys the command line withdraws from.
type KeyFile struct {
	Path string
	Keys *accesstoken.KeySet
}

// SigningKeyID is the file's signing key.
func (f KeyFile) SigningKeyID() string { return f.Keys.SigningKeyID() }

// PublishedKeyIDs are the file's keys, every one of them published.
func (f KeyFile) PublishedKeyIDs() []string { return f.Keys.KeyIDs() }

// FileWithdrawal is a withdrawal from a key file: its version and the
// file's keys after it.
type FileWithdrawal struct {
	Version int64
	Keys    *accesstoken.KeySet
}

// WithdrawFromFile is the command line's withdrawal: kid withdrawn on
// every server (WithdrawKey, against the file's keys), then removed from
// the file. Redis first: if it fails, the file still holds the key and the
// withdrawal can be run again. As with WithdrawKey, a version with an
// error is a withdrawal recorded but not confirmed or not announced; one
// without Keys was recorded but the file not rewritten.
func (s *Service) WithdrawFromFile(ctx context.Context, f KeyFile, kid string) (FileWithdrawal, error) {
	v, err := s.WithdrawKey(ctx, kid, f)
	if v == 0 {
		return FileWithdrawal{}, err
	}
	next, werr := f.Keys.Without(kid)
	if werr == nil {
		werr = next.WriteFile(f.Path)
	}
	if werr != nil {
		return FileWithdrawal{Version: v}, fmt.Errorf("withdrawn in Redis, but %s was not rewritten: %w", f.Path, werr)
	}
	return FileWithdrawal{Version: v, Keys: next}, err
}

// Withdrawn returns the withdrawn key ids, sorted.
func (s *Service) Withdrawn(ctx context.Context) ([]string, error) {
	if s.Withdrawals == nil {
		return nil, errors.New("operations: no withdrawal store")
	}
	st, err := s.Withdrawals.Read(ctx)
	if err != nil {
		return nil, err
	}
	kids := make([]string, 0, len(st.Kids))
	for k := range st.Kids {
		kids = append(kids, k)
	}
	slices.Sort(kids)
	return kids, nil
}
