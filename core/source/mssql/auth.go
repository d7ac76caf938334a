package mssql

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	mssqldrv "github.com/microsoft/go-mssqldb"

	"github.com/mssqlcdc/mssqlcdc/core/source"
)

// Authentication methods of Options.Auth (docs/reference/sqlserver-cdc.md §13.8).
const (
	// AuthSQL is a SQL Server login: user and password (the default).
	AuthSQL = "sql"
	// AuthNTLM is Windows authentication of an Active Directory account over NTLM, the
	// driver's integrated authentication off Windows: the user is DOMAIN\user.
	AuthNTLM = "ntlm"
	// AuthEntraServicePrincipal is Microsoft Entra ID (Azure AD) with an application's
	// client secret: TenantID, ClientID, and the secret as the password.
	AuthEntraServicePrincipal = "entra-service-principal"
)

// DefaultEntraAuthority is Microsoft Entra ID's public cloud token authority.
const DefaultEntraAuthority = "https://login.microsoftonline.com"

// entraScope is the resource Azure SQL tokens are issued for.
const entraScope = "https://database.windows.net/.default"

// checkAuth validates the authentication settings.
func (o Options) checkAuth(user string) []error {
	bad := func(arg, why string) error { return &source.InvalidArgumentError{Arg: arg, Reason: why} }
	switch o.Auth {
	case "", AuthSQL:
	case AuthNTLM:
		if !strings.Contains(user, `\`) {
			return []error{bad("user", fmt.Sprintf("%q: NTLM authentication needs DOMAIN\\user", user))}
		}
	case AuthEntraServicePrincipal:
		var errs []error
		if o.TenantID == "" {
			errs = append(errs, bad("tenant id", "required with entra-service-principal"))
		}
		if o.ClientID == "" {
			errs = append(errs, bad("client id", "required with entra-service-principal"))
		}
		return errs
	case "kerberos":
		return []error{bad("auth", "kerberos is not available: go-mssqldb's krb5 provider needs a Kerberos library this build does not include; use ntlm for an Active Directory account, or a SQL login")}
	default:
		return []error{bad("auth", fmt.Sprintf("%q: want sql, ntlm or entra-service-principal", o.Auth))}
	}
	return nil
}

// entraConnectorBuilder builds, from a URL whose password is the client secret, a
// go-mssqldb connector that logs in with an Entra ID access token of the service principal
// (the client-credentials grant, fetched from the authority and cached until shortly before
// it expires). The URL's user and password are not sent to SQL Server.
func entraConnectorBuilder(o Options, client *http.Client) func(dsn string) (driver.Connector, error) {
	authority := strings.TrimRight(o.EntraAuthority, "/")
	if authority == "" {
		authority = DefaultEntraAuthority
	}
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	return func(dsn string) (driver.Connector, error) {
		u, err := url.Parse(dsn)
		if err != nil {
			return nil, err
		}
		secret, _ := u.User.Password()
		u.User = nil
		tokens := &entraTokens{client: client, endpoint: authority + "/" + url.PathEscape(o.TenantID) + "/oauth2/v2.0/token",
			clientID: o.ClientID, secret: secret}
		return mssqldrv.NewConnectorWithAccessTokenProvider(u.String(), tokens.token)
	}
}

// entraTokens fetches and caches one service principal's access tokens.
type entraTokens struct {
	client             *http.Client
	endpoint, clientID string
	secret             string

	mu      sync.Mutex
	current string
	expires time.Time
}

// token is the cached token, or a new one when it expires within five minutes. A refused
// request (400 or 401: a wrong or rotated secret) is a *source.LoginError, so the DB reads
// the secret again.
func (t *entraTokens) token(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current != "" && time.Until(t.expires) > 5*time.Minute {
		return t.current, nil
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {t.clientID}, "client_secret": {t.secret}, "scope": {entraScope}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := t.client.Do(req)
	if err != nil {
		return "", &source.TransientError{Op: "entra id token", Err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var doc struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &doc)
	switch {
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized:
		return "", &source.LoginError{Message: fmt.Sprintf("Entra ID refused client %s: %s %s", t.clientID, doc.Error, firstLine(doc.Description))}
	case resp.StatusCode != http.StatusOK || doc.AccessToken == "":
		return "", &source.TransientError{Op: "entra id token", Err: fmt.Errorf("HTTP %d from %s", resp.StatusCode, t.endpoint)}
	}
	t.current = doc.AccessToken
	t.expires = time.Now().Add(time.Duration(doc.ExpiresIn) * time.Second)
	return t.current, nil
}

func firstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}
