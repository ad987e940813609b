package helm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/partnerapi/authplatform/deploy/e2e/e2etest"
)

// values are the chart's values.yaml with a case's values merged over it,
// as Helm merges them (maps key by key, anything else replaced).
type values map[string]any

func parseValues(t *testing.T, caseValues string) values {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(e2etest.RepoRoot(t), chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var defaults, over map[string]any
	if err := yaml.Unmarshal(raw, &defaults); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(caseValues), &over); err != nil {
		t.Fatal(err)
	}
	return merge(defaults, over)
}

func merge(dst, src map[string]any) map[string]any {
	for k, sv := range src {
		if sm, ok := sv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				dst[k] = merge(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
	return dst
}

// at is the value at path, nil if there is none.
func (v values) at(path ...string) any {
	var cur any = map[string]any(v)
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func (v values) bool(path ...string) bool {
	b, _ := v.at(path...).(bool)
	return b
}

func (v values) string(path ...string) string {
	s, _ := v.at(path...).(string)
	return s
}

// decode converts the value at path into out, through JSON as the API's
// types expect.
func (v values) decode(t *testing.T, out any, path ...string) {
	t.Helper()
	b, err := json.Marshal(v.at(path...))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("values %v: %v", path, err)
	}
}

// metaSelector converts an API label selector; a nil one selects nothing.
func metaSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}
