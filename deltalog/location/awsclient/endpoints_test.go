package awsclient_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithy "github.com/aws/smithy-go"
	smithyauth "github.com/aws/smithy-go/auth"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location/awsclient"
)

// s3Params are varied S3 resolution parameters: buckets of each form (virtual-hostable,
// dotted, not DNS-compatible, an access point ARN, none), regions of several partitions,
// path style, FIPS, dual-stack, accelerate, the global endpoint, custom endpoints.
func s3Params() []s3.EndpointParameters {
	var out []s3.EndpointParameters
	buckets := []*string{aws.String("my-bucket"), aws.String("my.dotted.bucket"), aws.String("Not_DNS"),
		aws.String("arn:aws:s3:us-west-2:123456789012:accesspoint/myendpoint"), nil}
	regions := []string{"us-east-1", "eu-west-1", "cn-north-1", "us-gov-west-1", "aws-global"}
	endpoints := []*string{nil, aws.String("http://127.0.0.1:9000"), aws.String("https://minio.example.com:9000/base")}
	for _, b := range buckets {
		for _, r := range regions {
			for _, ep := range endpoints {
				for _, flags := range []struct{ path, fips, dual, accel, global bool }{
					{}, {path: true}, {fips: true}, {dual: true}, {fips: true, dual: true}, {accel: true}, {global: true},
				} {
					out = append(out, s3.EndpointParameters{
						Bucket: b, Region: aws.String(r), Endpoint: ep,
						ForcePathStyle: aws.Bool(flags.path), UseFIPS: aws.Bool(flags.fips),
						UseDualStack: aws.Bool(flags.dual), Accelerate: aws.Bool(flags.accel),
						UseGlobalEndpoint:              aws.Bool(flags.global),
						DisableMultiRegionAccessPoints: aws.Bool(false), UseArnRegion: aws.Bool(false),
					})
				}
			}
		}
	}
	return out
}

// sameEndpoint fails unless got and want are the same answer.
func sameEndpoint(t *testing.T, what string, got, want smithyendpoints.Endpoint, gotErr, wantErr error) {
	t.Helper()
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%s: error %v, want %v", what, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

func TestCachedS3EndpointsAnswerAsTheSDK(t *testing.T) {
	ctx := context.Background()
	sdk := s3.NewDefaultEndpointResolverV2()
	cached := awsclient.CachedS3Endpoints(nil)
	params := s3Params()
	for pass := range 2 { // a miss, then a hit
		for i, p := range params {
			// The object key, prefix and copy source are not part of the cache key: a
			// hit for another key answers what the SDK answers for that key.
			p.Key = aws.String(fmt.Sprintf("_delta_log/%020d.json", pass))
			p.Prefix = aws.String(fmt.Sprintf("offsets/%d", pass))
			p.CopySource = aws.String(fmt.Sprintf("b/k%d", pass))
			want, wantErr := sdk.ResolveEndpoint(ctx, p)
			got, gotErr := cached.ResolveEndpoint(ctx, p)
			sameEndpoint(t, fmt.Sprintf("pass %d, params %d %s", pass, i, describe(p)), got, want, gotErr, wantErr)
		}
	}
	var ok int
	for _, p := range params {
		if _, err := sdk.ResolveEndpoint(ctx, p); err == nil {
			ok++
		}
	}
	if ok < len(params)/3 || ok == len(params) {
		t.Fatalf("%d of %d parameter sets resolve: the test should cover both answers", ok, len(params))
	}
}

func describe(p s3.EndpointParameters) string {
	return fmt.Sprintf("bucket=%s region=%s endpoint=%s path=%v fips=%v dual=%v accel=%v global=%v",
		aws.ToString(p.Bucket), aws.ToString(p.Region), aws.ToString(p.Endpoint), *p.ForcePathStyle,
		*p.UseFIPS, *p.UseDualStack, *p.Accelerate, *p.UseGlobalEndpoint)
}

// A caller that changes the endpoint it was given changes no later answer, as the SDK's
// S3 auth scheme resolver does: it renames auth schemes and replaces their properties in
// the endpoint's auth options (endpoint_auth_resolver.go).
func TestCachedEndpointIsTheCallersCopy(t *testing.T) {
	ctx := context.Background()
	cached := awsclient.CachedS3Endpoints(nil)
	p := s3Params()[0]
	want, err := s3.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if opts, ok := smithyauth.GetAuthOptions(&want.Properties); !ok || len(opts) == 0 {
		t.Fatal("the SDK's answer has no auth options: choose parameters that have")
	}
	for i := range 3 {
		e, err := cached.ResolveEndpoint(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		sameEndpoint(t, fmt.Sprintf("answer %d", i), e, want, nil, nil)
		change(&e)
	}
}

// change changes everything in e that a caller could.
func change(e *smithyendpoints.Endpoint) {
	e.URI.Host = "changed.example"
	e.URI.Path = "/changed"
	if e.Headers == nil {
		e.Headers = map[string][]string{}
	}
	e.Headers.Set("X-Changed", "1")
	opts, _ := smithyauth.GetAuthOptions(&e.Properties)
	for _, o := range opts {
		o.SchemeID = "changed"
		o.SignerProperties.Set("changed", true)
		o.IdentityProperties.Set("changed", true)
		if r, ok := smithyhttp.GetSigV4ASigningRegions(&o.SignerProperties); ok && len(r) > 0 {
			r[0] = "changed"
		}
	}
	if len(opts) > 0 {
		opts[0] = &smithyauth.Option{SchemeID: "replaced"}
	}
	e.Properties.Set("changed", true)
}

// Callers changing their answers at once share nothing (run with -race).
func TestCachedEndpointsConcurrentCallers(t *testing.T) {
	ctx := context.Background()
	cached := awsclient.CachedS3Endpoints(nil)
	params := s3Params()[:40]
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				for _, p := range params {
					if e, err := cached.ResolveEndpoint(ctx, p); err == nil {
						change(&e)
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestEndpointPropertiesAreCopyable checks that the SDK's endpoint rules put nothing in an
// endpoint's properties that CloneEndpoint would share: besides strings and booleans, only
// the auth options (at their key) and the SigV4a regions (at theirs), which it copies. A
// new kind of value (an SDK upgrade) fails here: teach CloneEndpoint to copy it.
func TestEndpointPropertiesAreCopyable(t *testing.T) {
	ctx := context.Background()
	var check func(where string, p *smithy.Properties, signer bool)
	check = func(where string, p *smithy.Properties, signer bool) {
		for k, v := range p.Values() {
			switch v := v.(type) {
			case string, bool:
			case []string:
				if r, ok := smithyhttp.GetSigV4ASigningRegions(p); !signer || !ok || len(v) == 0 || &r[0] != &v[0] {
					t.Errorf("%s: property %T holds a []string: teach CloneEndpoint to copy it", where, k)
				}
			case []*smithyauth.Option:
				if o, ok := smithyauth.GetAuthOptions(p); signer || !ok || len(v) == 0 || &o[0] != &v[0] {
					t.Errorf("%s: property %T holds auth options: teach CloneEndpoint to copy them", where, k)
				}
				for _, o := range v {
					check(where+" auth option "+o.SchemeID+" identity", &o.IdentityProperties, false)
					check(where+" auth option "+o.SchemeID+" signer", &o.SignerProperties, true)
				}
			default:
				t.Errorf("%s: property %T holds a %T: teach CloneEndpoint to copy it", where, k, v)
			}
		}
	}
	n := 0
	for _, p := range s3Params() {
		if e, err := s3.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, p); err == nil {
			check("S3 "+describe(p), &e.Properties, false)
			n++
		}
	}
	e, err := dynamodb.NewDefaultEndpointResolverV2().ResolveEndpoint(ctx, dynamodb.EndpointParameters{
		Region: aws.String("us-east-1"), UseFIPS: aws.Bool(false), UseDualStack: aws.Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	check("DynamoDB", &e.Properties, false)
	if n == 0 {
		t.Fatal("no S3 endpoint resolved")
	}
}

// TestS3EndpointKeyCoversParameters fails when the SDK's S3 resolution parameters are not
// the ones the cache key was written for (an SDK upgrade added one): review s3EndpointKey.
func TestS3EndpointKeyCoversParameters(t *testing.T) {
	keyed := []string{"Bucket", "Region", "UseFIPS", "UseDualStack", "Endpoint", "ForcePathStyle", "Accelerate",
		"UseGlobalEndpoint", "UseObjectLambdaEndpoint", "DisableAccessPoints", "DisableMultiRegionAccessPoints",
		"UseArnRegion", "UseS3ExpressControlEndpoint", "DisableS3ExpressSessionAuth"}
	unread := []string{"Key", "Prefix", "CopySource"} // TestS3EndpointRulesIgnoreObjectKeys
	checkFields(t, reflect.TypeFor[s3.EndpointParameters](), append(keyed, unread...))
}

// TestDynamoDBEndpointKeyCoversParameters is TestS3EndpointKeyCoversParameters for
// dynamoEndpointKey, which keys every parameter.
func TestDynamoDBEndpointKeyCoversParameters(t *testing.T) {
	checkFields(t, reflect.TypeFor[dynamodb.EndpointParameters](), []string{"Region", "UseDualStack", "UseFIPS",
		"Endpoint", "AccountId", "AccountIdEndpointMode", "ResourceArn", "ResourceArnList", "IsSearchOperation"})
}

func checkFields(t *testing.T, typ reflect.Type, want []string) {
	t.Helper()
	var got []string
	for f := range typ.Fields() {
		got = append(got, f.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%v has fields %v; the endpoint cache key was written for %v: review the key (endpoints.go)", typ, got, want)
	}
}

// TestS3EndpointRulesIgnoreObjectKeys reads the SDK's generated S3 endpoint resolver (the
// version in go.mod) and checks that no rule reads Key, Prefix or CopySource, which the
// cache key leaves out.
func TestS3EndpointRulesIgnoreObjectKeys(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-sdk-go-v2/service/s3").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	src, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "endpoints.go"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	if !readsParam("Bucket").MatchString(s) {
		t.Fatal("endpoints.go reads no params.Bucket: the generated resolver changed form, review this test")
	}
	for _, f := range []string{"Key", "Prefix", "CopySource"} {
		if loc := readsParam(f).FindStringIndex(s); loc != nil {
			t.Errorf("the S3 endpoint rules read %s (%q at byte %d): add it to s3EndpointKey", f, s[loc[0]:loc[1]], loc[0])
		}
	}
}

// readsParam matches the generated resolver's reads of the parameter field.
func readsParam(field string) *regexp.Regexp {
	return regexp.MustCompile(`\b(params|p)\.` + field + `\b`)
}

func TestCachedDynamoDBEndpointsAnswerAsTheSDK(t *testing.T) {
	ctx := context.Background()
	sdk := dynamodb.NewDefaultEndpointResolverV2()
	cached := awsclient.CachedDynamoDBEndpoints(nil)
	var params []dynamodb.EndpointParameters
	for _, r := range []string{"us-east-1", "eu-west-1", "cn-north-1", "us-gov-west-1", "local"} {
		for _, ep := range []*string{nil, aws.String("http://127.0.0.1:8000")} {
			for _, acct := range []*string{nil, aws.String("123456789012")} {
				for _, mode := range []string{"preferred", "required", "disabled"} {
					for _, fd := range [][2]bool{{}, {true, false}, {false, true}, {true, true}} {
						for _, arn := range []*string{nil, aws.String("arn:aws:dynamodb:us-east-1:222222222222:table/delta_log")} {
							params = append(params, dynamodb.EndpointParameters{Region: aws.String(r), Endpoint: ep,
								AccountId: acct, AccountIdEndpointMode: aws.String(mode), UseFIPS: aws.Bool(fd[0]),
								UseDualStack: aws.Bool(fd[1]), ResourceArn: arn})
						}
					}
				}
			}
		}
	}
	params = append(params, dynamodb.EndpointParameters{Region: aws.String("us-east-1"), UseFIPS: aws.Bool(false),
		UseDualStack: aws.Bool(false), AccountIdEndpointMode: aws.String("preferred"),
		ResourceArnList: []string{"arn:aws:dynamodb:us-east-1:333333333333:table/a"}})
	for pass := range 2 {
		for i, p := range params {
			want, wantErr := sdk.ResolveEndpoint(ctx, p)
			got, gotErr := cached.ResolveEndpoint(ctx, p)
			sameEndpoint(t, fmt.Sprintf("pass %d, params %d %+v", pass, i, p), got, want, gotErr, wantErr)
		}
	}
}
