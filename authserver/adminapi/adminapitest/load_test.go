package adminapitest_test

import (
	"testing"

	"github.com/partnerapi/authplatform/authserver/adminapi/adminapitest"
)

func TestLoad(t *testing.T) {
	if _, err := adminapitest.Load(); err != nil {
		t.Fatal(err)
	}
}
