package connect

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/mssqlcdc/mssqlcdc/core/config"
	"github.com/mssqlcdc/mssqlcdc/core/source/cdcsim"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestSpecFromEnv(t *testing.T) {
	var ce *config.ConfigError
	_, err := SpecFromEnv(env(nil))
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), SpecEnv+" is empty or unset") {
		t.Fatalf("unset: %v", err)
	}
	_, err = SpecFromEnv(env(map[string]string{SpecEnv: `{"app_id":"a"}`}))
	if !errors.As(err, &ce) || !ce.Has("bronze") {
		t.Fatalf("invalid spec: %v", err)
	}
	s, err := SpecFromEnv(env(map[string]string{SpecEnv: `{"app_id":"a","source":{"dsn":"sqlserver://u@h?database=d","captureInstance":"dbo_t"},
		"bronze":"/l/b","checkpoint":"/l/cp","facts_table":"/l/f","storage":{"dynamo_table":"delta_log","dynamo_region":"us-east-1","table_path_scheme":"s3a","region":"eu-west-1"}}`}))
	if err != nil {
		t.Fatal(err)
	}
	loc := Location(s)
	if loc.DynamoRegion != "us-east-1" || loc.TablePathScheme != "s3a" || loc.Region != "eu-west-1" || loc.DynamoTable != "delta_log" {
		t.Errorf("location %+v: the spec's storage must pass through", loc)
	}
}

// fakeSecrets is Secrets Manager holding one secret.
type fakeSecrets struct {
	arn, value string
	binary     bool
}

func (f fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	if *in.SecretId != f.arn {
		return nil, errors.New("ResourceNotFoundException")
	}
	if f.binary {
		return &secretsmanager.GetSecretValueOutput{SecretBinary: []byte(f.value)}, nil
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: &f.value}, nil
}

func TestPasswordFromSecretOrEnv(t *testing.T) {
	const arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:reader-AbCdEf"
	spec := &config.Spec{Source: config.Source{PasswordSecretARN: arn}}
	pw, err := Password(context.Background(), spec, env(nil), Secrets{Client: fakeSecrets{arn: arn, value: `{"username":"r","password":"p@ss"}`}})
	if err != nil || pw != "p@ss" {
		t.Fatalf("RDS-shaped secret: %q %v", pw, err)
	}
	_, err = Password(context.Background(), spec, env(nil), Secrets{Client: fakeSecrets{arn: arn, value: "x", binary: true}})
	if err == nil || !strings.Contains(err.Error(), "no string value") {
		t.Fatalf("binary secret: %v", err)
	}
	spec = &config.Spec{Source: config.Source{PasswordEnv: "PW"}}
	if pw, err := Password(context.Background(), spec, env(map[string]string{"PW": "s3cret"}), nil); err != nil || pw != "s3cret" {
		t.Fatalf("env: %q %v", pw, err)
	}
	if arnRegion(arn) != "eu-west-1" || arnRegion("nope") != "" {
		t.Error("arnRegion")
	}
}

// StreamDeps and SnapshotDeps open the spec's local tables around a source; no facts table
// leaves Facts nil.
func TestOpenLocalTables(t *testing.T) {
	dir := t.TempDir()
	spec := &config.Spec{AppID: "a", Source: config.Source{DSN: "sqlserver://u@h?database=d", CaptureInstance: "dbo_t"},
		Bronze: filepath.Join(dir, "b"), Checkpoint: filepath.Join(dir, "cp"), FactsTable: filepath.Join(dir, "f")}
	spec.Defaults()
	db := cdcsim.New(cdcsim.Config{Seed: 1})
	deps, err := StreamDeps(context.Background(), spec, db)
	if err != nil || deps.Bronze == nil || deps.Facts == nil || deps.Checkpoint == nil || deps.Source != db {
		t.Fatalf("deps %+v %v", deps, err)
	}
	spec.FactsTable = ""
	tables, err := OpenTables(context.Background(), spec)
	if err != nil || tables.Facts != nil || tables.Bronze == nil || tables.Checkpoint == nil {
		t.Fatalf("tables %+v %v", tables, err)
	}
	if d, err := SnapshotDeps(context.Background(), spec, db); err != nil || d.Spec != spec || d.Facts != nil || d.Staging == nil {
		t.Fatalf("snapshot deps %+v %v", d, err)
	}
	spec.Bronze = "gs://x/y"
	if _, err := OpenTables(context.Background(), spec); err == nil {
		t.Fatal("an unsupported scheme opened")
	}
}

// The source's PasswordFunc hands out the password read at open first, then reads the
// secret again each time it is asked (after a refused login: a rotation).
func TestPasswordFuncRereadsSecret(t *testing.T) {
	const arn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:reader-AbCdEf"
	spec := &config.Spec{Source: config.Source{PasswordSecretARN: arn}}
	sec := Secrets{Client: fakeSecrets{arn: arn, value: `{"password":"new"}`}}
	fn := passwordFunc(spec, env(nil), sec, "old")
	ctx := context.Background()
	if pw, err := fn(ctx); err != nil || pw != "old" {
		t.Fatalf("first: %q %v", pw, err)
	}
	if pw, err := fn(ctx); err != nil || pw != "new" {
		t.Fatalf("after rotation: %q %v", pw, err)
	}
	if passwordFunc(&config.Spec{}, env(nil), nil, "") != nil {
		t.Error("a DSN password needs no PasswordFunc")
	}
}
