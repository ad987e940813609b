package accesstoken

import "errors"

// CheckNames reports an empty issuer or audience, both at once: every token
// this platform issues or accepts names both ("iss" and "aud", RFC 9068
// section 2.2), so the configuration of either server requires them.
func CheckNames(issuer, audience string) error {
	var errs []error
	if issuer == "" {
		errs = append(errs, errors.New("issuer is required"))
	}
	if audience == "" {
		errs = append(errs, errors.New("audience is required"))
	}
	return errors.Join(errs...)
}
