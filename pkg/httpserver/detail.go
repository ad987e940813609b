package httpserver

import (
	"net/http"

	"github.com/partnerapi/authplatform/pkg/jsontext"
)

// detailAnswers is the format of {"detail"} bodies: JSON without HTML
// escaping (JSONConfig.EscapeHTML says why).
var detailAnswers = NewJSONFormat(JSONConfig{ContentType: "application/json; charset=utf-8", Internal: `{"detail":"internal error"}`})

// WriteDetail answers status with the body {"detail": detail} (the error
// shapes of deploy/docs/ARCHITECTURE.md, "Wiring"; the resource server's every error, the probes' 503s, a
// recovered panic's 500) and header's fields. It is the one writer of that
// format.
func WriteDetail(w http.ResponseWriter, status int, header http.Header, detail string) {
	detailAnswers.WriteText(w, status, header, func(b []byte) []byte {
		b = append(b, `{"detail":`...)
		b = jsontext.AppendString(b, detail)
		return append(b, '}')
	})
}

// DetailMisrouted answers a request no route takes as {"detail"}: "not
// found" or "method not allowed" (the resource server's and the metrics
// listener's format).
func DetailMisrouted(w http.ResponseWriter, _ *http.Request, status int, _ []string) {
	if status == http.StatusMethodNotAllowed {
		WriteDetail(w, status, nil, "method not allowed")
		return
	}
	WriteDetail(w, http.StatusNotFound, nil, "not found")
}
