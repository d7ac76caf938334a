package connect

import (
	"context"
	"fmt"
	"strings"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mssqlcdc/mssqlcdc/core/config"
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
	if spec.Source.PasswordSecretARN != "" && secrets == nil {
		var opts []func(*awsconfig.LoadOptions) error
		if r := arnRegion(spec.Source.PasswordSecretARN); r != "" {
			opts = append(opts, awsconfig.WithRegion(r))
		}
		cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
		if err != nil {
			return "", fmt.Errorf("aws config for secrets manager: %w", err)
		}
		secrets = Secrets{Client: secretsmanager.NewFromConfig(cfg)}
	}
	return spec.Source.Password(ctx, getenv, secrets)
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
