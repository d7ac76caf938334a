package config

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// SecretGetter fetches a secret's string value by ARN (Secrets Manager GetSecretValue's
// SecretString). main wires the AWS SDK behind it; tests pass a map.
type SecretGetter interface {
	SecretString(ctx context.Context, arn string) (string, error)
}

// ErrNoSecretGetter: the spec names a secret ARN and the caller gave no SecretGetter.
var ErrNoSecretGetter = errors.New("config: password_secret_arn set but no Secrets Manager client")

// PasswordUnsetError: the spec's source.password_env names an environment variable that
// is empty or unset where mssqlcdc runs. The spec is fine (it is no ConfigError); the
// environment lacks the password: export it, or on AWS set it through the Terraform
// module's extra_environment, or use source.password_secret_arn (docs/spec.md § source).
// Step Functions sees this name and does not retry it.
type PasswordUnsetError struct {
	// Env is the variable's name (never its value).
	Env string
}

func (e *PasswordUnsetError) Error() string {
	return fmt.Sprintf("password not set: source.password_env names the environment variable %s, which is empty or unset: "+
		"export it with the SQL login's password (%s=...) where mssqlcdc runs, or on AWS set it through the module's "+
		"extra_environment or use source.password_secret_arn", e.Env, e.Env)
}

// Password resolves the source password: from the environment variable PasswordEnv (read
// with getenv; empty or unset is a *PasswordUnsetError), from the secret
// PasswordSecretARN (plain text, or JSON with a "password" key as RDS writes; other JSON
// is a *PasswordSecretError), or "" when
// neither is set (the DSN holds it, or integrated auth).
func (src Source) Password(ctx context.Context, getenv func(string) string, secrets SecretGetter) (string, error) {
	switch {
	case src.PasswordEnv != "":
		v := getenv(src.PasswordEnv)
		if v == "" {
			return "", &PasswordUnsetError{Env: src.PasswordEnv}
		}
		return v, nil
	case src.PasswordSecretARN != "":
		if secrets == nil {
			return "", ErrNoSecretGetter
		}
		v, err := secrets.SecretString(ctx, src.PasswordSecretARN)
		if err != nil {
			return "", fmt.Errorf("read secret %s: %w", src.PasswordSecretARN, err)
		}
		if t := strings.TrimSpace(v); strings.HasPrefix(t, "{") {
			return secretJSONPassword(src.PasswordSecretARN, t)
		}
		return v, nil
	}
	return "", nil
}

// PasswordSecretError: the secret source.password_secret_arn names was read, but holds
// JSON (it begins with '{') without a non-empty "password" string, so no password can be
// taken from it. The spec is fine (it is no ConfigError); the secret must change: store
// the password as plain text, or JSON with a "password" key as RDS writes it (docs/spec.md
// § source). Neither the message nor the fields hold any of the secret's contents. Step
// Functions sees this name and does not retry it.
type PasswordSecretError struct {
	// ARN is the secret's ARN, as the spec gives it.
	ARN string
	// Shape is what is wrong with the secret, in words ("has no \"password\" key").
	Shape string
}

func (e *PasswordSecretError) Error() string {
	return fmt.Sprintf("password secret %s %s: want the password as plain text, or JSON with a non-empty "+
		`"password" string (as RDS writes it: {"username":"...","password":"..."})`, e.ARN, e.Shape)
}

// secretJSONPassword is the "password" string of the secret arn's JSON text t, else a
// *PasswordSecretError saying why not. json's own errors are dropped: they may quote the
// secret.
func secretJSONPassword(arn, t string) (string, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(t), &doc); err != nil {
		return "", &PasswordSecretError{ARN: arn, Shape: "begins with '{' but is not valid JSON"}
	}
	raw, ok := doc["password"]
	for k, v := range doc {
		if !ok && strings.EqualFold(k, "password") { // as encoding/json matches a field
			raw, ok = v, true
		}
	}
	if !ok {
		return "", &PasswordSecretError{ARN: arn, Shape: `has no "password" key`}
	}
	var pw string
	if err := json.Unmarshal(raw, &pw); err != nil {
		return "", &PasswordSecretError{ARN: arn, Shape: `has a "password" that is not a string`}
	}
	if pw == "" {
		return "", &PasswordSecretError{ARN: arn, Shape: `has an empty "password"`}
	}
	return pw, nil
}

// ConnString is DSN with password set as the URL's user password (built with net/url,
// so special characters are escaped). An empty password returns DSN unchanged. A DSN that
// is not a URL is a *ConfigError on source.dsn that repeats none of it.
func (src Source) ConnString(password string) (string, error) {
	if password == "" {
		return src.DSN, nil
	}
	u, err := url.Parse(src.DSN)
	if err != nil {
		return "", &ConfigError{Problems: []Problem{{Field: "source.dsn", Reason: dsnParseReason(err)}}}
	}
	user := ""
	if u.User != nil {
		user = u.User.Username()
	}
	u.User = url.UserPassword(user, password)
	return u.String(), nil
}
