module github.com/partnerapi/authplatform/pkg/partnerclient

go 1.22

require (
	golang.org/x/oauth2 v0.26.0
	golang.org/x/sync v0.11.0
)
