package connect

import (
	"context"
	"fmt"
	"strings"
	"sync"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source/mssql"
)

// SecretsClient is the one Secrets Manager call the password needs, with the SDK's
// signature: *secretsmanager.Client satisfies it.
type SecretsClient interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Secrets is Secrets Manager behind config.SecretGetter.
type Secrets struct {
	Client SecretsClient
}

var _ config.SecretGetter = Secrets{}

// SecretString is the secret's SecretString. A binary-only secret is an error naming it.
func (s Secrets) SecretString(ctx context.Context, arn string) (string, error) {
	out, err := s.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &arn})
	if err != nil {
		return "", err
	}
	if out.SecretString == nil {
		return "", fmt.Errorf("secret %s has no string value (store the password as text, or JSON with a \"password\" key)", arn)
	}
	return *out.SecretString, nil
}

// Password resolves the spec's source password (config.Source.Password): from the
// environment variable it names (read with getenv), or from its Secrets Manager ARN through
// secrets. A nil secrets builds a Secrets Manager client from the default AWS chain, in
// the ARN's region, and only when the spec names an ARN.
func Password(ctx context.Context, spec *config.Spec, getenv func(string) string, secrets config.SecretGetter) (string, error) {
	secrets, err := secretGetter(ctx, spec, secrets)
	if err != nil {
		return "", err
	}
	return spec.Source.Password(ctx, getenv, secrets)
}

// secretGetter is secrets, or a Secrets Manager client from the default AWS chain in the
// ARN's region when the spec names a secret and secrets is nil.
func secretGetter(ctx context.Context, spec *config.Spec, secrets config.SecretGetter) (config.SecretGetter, error) {
	if spec.Source.PasswordSecretARN == "" || secrets != nil {
		return secrets, nil
	}
	var opts []func(*awsconfig.LoadOptions) error
	if r := arnRegion(spec.Source.PasswordSecretARN); r != "" {
		opts = append(opts, awsconfig.WithRegion(r))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("aws config for secrets manager: %w", err)
	}
	return Secrets{Client: secretsmanager.NewFromConfig(cfg)}, nil
}

// passwordFunc is the mssql.PasswordFunc of the spec's password source: the password
// already read first, then a fresh read of the environment variable or the secret each
// time the DB asks again (after a refused login: a rotated secret,
// docs/reference/sqlserver-cdc.md §13.6). nil when the spec names neither (the DSN holds
// the password).
func passwordFunc(spec *config.Spec, getenv func(string) string, secrets config.SecretGetter, first string) mssql.PasswordFunc {
	if spec.Source.PasswordEnv == "" && spec.Source.PasswordSecretARN == "" {
		return nil
	}
	var mu sync.Mutex
	used := false
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if !used {
			used = true
			return first, nil
		}
		return spec.Source.Password(ctx, getenv, secrets)
	}
}

// arnRegion is the region field of an ARN (arn:partition:service:region:account:resource),
// "" when it has none.
func arnRegion(arn string) string {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) < 6 || parts[0] != "arn" {
		return ""
	}
	return parts[3]
}
