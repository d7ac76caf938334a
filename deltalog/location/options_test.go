package location_test

import (
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location"
	"github.com/mssqlcdc/mssqlcdc/deltalog/logstore/dynamo"
	"github.com/mssqlcdc/mssqlcdc/deltalog/storage/s3store"
	"github.com/mssqlcdc/mssqlcdc/internal/emulators"
)

// openClients returns the S3 and DynamoDB clients location.Open builds (no I/O).
func openClients(t *testing.T, cfg location.Config) (*s3.Client, *dynamodb.Client) {
	t.Helper()
	s, l, err := location.Open(t.Context(), "s3://bucket/lake/orders", cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := s.(*s3store.Store).Client().(*s3.Client)
	d, ok := l.(*dynamo.LogStore)
	if !ok {
		return c, nil
	}
	return c, d.Client().(*dynamodb.Client)
}

// Production's clients carry awsclient's options: the checksum
// settings of docs/decisions/0015, the standard retryer, no log line per ranged GET.
func TestOpenAppliesTheSharedClientOptions(t *testing.T) {
	c, d := openClients(t, location.Config{Region: "eu-west-1", DynamoTable: "delta_log", Credentials: emulators.Credentials})
	o := c.Options()
	if !o.DisableLogOutputChecksumValidationSkipped {
		t.Error("S3 logs each ranged GET's skipped checksum")
	}
	if o.RequestChecksumCalculation != aws.RequestChecksumCalculationWhenSupported ||
		o.ResponseChecksumValidation != aws.ResponseChecksumValidationWhenSupported {
		t.Errorf("checksums %v / %v, want when supported both ways", o.RequestChecksumCalculation, o.ResponseChecksumValidation)
	}
	if o.Region != "eu-west-1" || o.BaseEndpoint != nil || o.UsePathStyle {
		t.Errorf("region %q, endpoint %v, path style %v: want AWS's eu-west-1, virtual-hosted", o.Region, o.BaseEndpoint, o.UsePathStyle)
	}
	// Retries are the SDK's defaults (throttling and 5xx retried with backoff).
	sdkS3 := s3.NewFromConfig(aws.Config{Region: "eu-west-1"}).Options()
	if o.Retryer.MaxAttempts() != sdkS3.Retryer.MaxAttempts() || o.RetryMode != aws.RetryModeStandard {
		t.Errorf("retryer %T, %d attempts, mode %q: want the SDK's standard, %d", o.Retryer, o.Retryer.MaxAttempts(), o.RetryMode, sdkS3.Retryer.MaxAttempts())
	}
	do := d.Options()
	sdkDDB := dynamodb.NewFromConfig(aws.Config{Region: "eu-west-1"}).Options()
	if do.Region != "eu-west-1" || do.Retryer.MaxAttempts() != sdkDDB.Retryer.MaxAttempts() {
		t.Errorf("DynamoDB region %q, %d attempts, want %d", do.Region, do.Retryer.MaxAttempts(), sdkDDB.Retryer.MaxAttempts())
	}
}

// The emulator clients of the tests and benchmarks are production's but for the endpoint,
// path style and credentials: every other option has the same value, or for functions,
// interfaces, pointers and slices, the same type (and length).
func TestEmulatorClientsAreProductions(t *testing.T) {
	srv := emulators.StartS3(t)
	ddbURL := "http://127.0.0.1:1" // no request is made
	c, d := openClients(t, location.Config{Region: emulators.Region, Endpoint: srv.URL, PathStyle: true,
		DynamoTable: "delta_log", DynamoEndpoint: ddbURL, Credentials: emulators.Credentials})
	emuD, err := emulators.DynamoDBClient(ddbURL)
	if err != nil {
		t.Fatal(err)
	}
	sameOptions(t, c.Options(), srv.Client().Options(), "Credentials")
	sameOptions(t, d.Options(), emuD.Options(), "Credentials")
	if o := srv.Client().Options(); aws.ToString(o.BaseEndpoint) != srv.URL || !o.UsePathStyle {
		t.Errorf("emulator client: endpoint %v, path style %v", o.BaseEndpoint, o.UsePathStyle)
	}
}

func sameOptions[O any](t *testing.T, prod, emu O, skip ...string) {
	t.Helper()
	pv, ev := reflect.ValueOf(prod), reflect.ValueOf(emu)
	n := 0
	for i := range pv.NumField() {
		f := pv.Type().Field(i)
		if !f.IsExported() || contains(skip, f.Name) {
			continue
		}
		n++
		p, e := pv.Field(i), ev.Field(i)
		switch f.Type.Kind() {
		case reflect.Func, reflect.Interface, reflect.Pointer, reflect.Slice, reflect.Map:
			if p.IsNil() != e.IsNil() {
				t.Errorf("%v.%s: production nil %v, emulator nil %v", pv.Type(), f.Name, p.IsNil(), e.IsNil())
				continue
			}
			if f.Type.Kind() == reflect.Interface && !p.IsNil() && p.Elem().Type() != e.Elem().Type() {
				t.Errorf("%v.%s: production %v, emulator %v", pv.Type(), f.Name, p.Elem().Type(), e.Elem().Type())
			}
			if f.Type.Kind() == reflect.Slice && p.Len() != e.Len() {
				t.Errorf("%v.%s: production %d, emulator %d", pv.Type(), f.Name, p.Len(), e.Len())
			}
			if f.Type.Kind() == reflect.Pointer && f.Name != "BaseEndpoint" && !p.IsNil() && !reflect.DeepEqual(p.Interface(), e.Interface()) {
				t.Errorf("%v.%s: production %v, emulator %v", pv.Type(), f.Name, p.Elem(), e.Elem())
			}
		default:
			if f.Name == "UsePathStyle" {
				continue
			}
			if !reflect.DeepEqual(p.Interface(), e.Interface()) {
				t.Errorf("%v.%s: production %v, emulator %v", pv.Type(), f.Name, p.Interface(), e.Interface())
			}
		}
	}
	if n < 20 {
		t.Fatalf("compared %d options of %v", n, pv.Type())
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
