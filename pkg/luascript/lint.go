package luascript

import (
	"errors"
	"fmt"
	"strings"
)

// Lint checks a script file against its contract's rule: KEYS and ARGV are
// named only in the generated section (SectionBegin to SectionEnd), which
// binds each to a local, so the body reads keys and arguments by name and
// their order lives in the contract alone. A file without a section (one
// composed after a file that has it, such as the change scripts after
// change.lua) may not name them at all. Comments and strings are not
// looked at.
func Lint(text string) error {
	from, to := -1, -1
	if i := strings.Index(text, SectionBegin+"\n"); i >= 0 {
		from = i
		if j := strings.Index(text[i:], "\n"+SectionEnd+"\n"); j >= 0 {
			to = i + j
		} else {
			return errors.New("a generated section without its end line")
		}
	}
	var errs []error
	identifiers(text, func(start, end int) int {
		switch text[start:end] {
		case "KEYS", "ARGV":
			if start < from || start > to {
				errs = append(errs, fmt.Errorf("line %d: %s outside the generated section (name it in the contract)", lineOf(text, start), text[start:end]))
			}
		}
		return end
	})
	return errors.Join(errs...)
}
