package adminapi

import (
	"encoding/json"
)

func marshal(v any) ([]byte, error) { return json.Marshal(v) }

// withWarning marshals v, a JSON object, with one more member, "warning".
func withWarning(v any, warning string) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return nil, err
	}
	w, _ := json.Marshal(warning)
	members["warning"] = w
	return json.Marshal(members)
}
