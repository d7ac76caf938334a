package mssql

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	mssqldrv "github.com/microsoft/go-mssqldb"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Entra ID service principal: the client-credentials grant against the tenant's token
// endpoint, the token cached; a refused secret is a *source.LoginError (so the DB reads a
// rotated secret again).
func TestEntraServicePrincipalTokens(t *testing.T) {
	var requests atomic.Int64
	secret := "s3cret"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/tenant-1/oauth2/v2.0/token" || r.FormValue("grant_type") != "client_credentials" ||
			r.FormValue("client_id") != "app-1" || r.FormValue("scope") != "https://database.windows.net/.default" {
			http.Error(w, "bad request shape", http.StatusTeapot)
			return
		}
		if r.FormValue("client_secret") != secret {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided.\r\nTrace ID: x"}`))
			return
		}
		w.Write([]byte(`{"access_token":"tok-1","expires_in":3600,"token_type":"Bearer"}`))
	}))
	defer srv.Close()
	o := Options{DSN: "sqlserver://:s3cret@db.database.windows.net?database=shop", Auth: AuthEntraServicePrincipal, TenantID: "tenant-1", ClientID: "app-1", EntraAuthority: srv.URL}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	build := entraConnectorBuilder(o, srv.Client())
	c, err := build(o.dsn())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(*mssqldrv.Connector); !ok {
		t.Fatalf("connector %T", c)
	}
	tokens := &entraTokens{client: srv.Client(), endpoint: srv.URL + "/tenant-1/oauth2/v2.0/token", clientID: "app-1", secret: "s3cret"}
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if tok, err := tokens.token(ctx); err != nil || tok != "tok-1" {
			t.Fatalf("token: %q %v", tok, err)
		}
	}
	if requests.Load() != 1 {
		t.Fatalf("%d token requests for two logins, want 1 (cached)", requests.Load())
	}
	stale := &entraTokens{client: srv.Client(), endpoint: srv.URL + "/tenant-1/oauth2/v2.0/token", clientID: "app-1", secret: "old"}
	_, err = stale.token(ctx)
	var le *source.LoginError
	if !errors.As(err, &le) {
		t.Fatalf("refused secret: %v, want *source.LoginError", err)
	}
	// Open builds the DB without I/O, through the rotating connector.
	d, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.rot == nil {
		t.Fatal("an Entra ID source must log in through the rotating connector")
	}
}

// The authentication settings are checked: Entra ID needs its tenant and client, NTLM a
// DOMAIN\user, Kerberos is not available in this build.
func TestAuthValidation(t *testing.T) {
	for _, c := range []struct {
		o   Options
		arg string
	}{
		{Options{Host: "h", Database: "d", Auth: AuthEntraServicePrincipal, ClientID: "a"}, "tenant id"},
		{Options{Host: "h", Database: "d", Auth: AuthEntraServicePrincipal, TenantID: "t"}, "client id"},
		{Options{Host: "h", Database: "d", User: "reader", Auth: AuthNTLM}, "user"},
		{Options{Host: "h", Database: "d", Auth: "kerberos"}, "auth"},
		{Options{Host: "h", Database: "d", Auth: "magic"}, "auth"},
	} {
		var ia *source.InvalidArgumentError
		if err := c.o.Validate(); !errors.As(err, &ia) || ia.Arg != c.arg {
			t.Errorf("%+v: %v, want an invalid %s", c.o, err, c.arg)
		}
	}
	if err := (Options{DSN: `sqlserver://CORP%5Creader@h?database=d`, Auth: AuthNTLM}).Validate(); err != nil {
		t.Errorf("NTLM with DOMAIN\\user: %v", err)
	}
}
