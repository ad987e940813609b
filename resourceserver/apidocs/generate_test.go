package apidocs_test

import (
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/resourceserver/apidocs/internal/render"
)

// The committed generated/ is byte for byte what go generate renders from
// openapi.json, the guides and the reference template now: an edit of any
// of them, or of generated/, without regenerating fails here.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	diffs, err := render.Diff(".")
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if len(diffs) > 0 {
		t.Errorf("generated/ is not what go generate renders; run\n\tgo generate ./resourceserver/apidocs\n%s", strings.Join(diffs, "\n"))
	}
}
