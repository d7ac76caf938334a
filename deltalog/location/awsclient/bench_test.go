package awsclient_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mssqlcdc/mssqlcdc/deltalog/location/awsclient"
)

// BenchmarkS3Endpoint is one S3 endpoint resolution as a request to AWS makes it (a
// virtual-hosted bucket in us-east-1, an object key), by the SDK's rules and through the
// cache:
//
//	go test ./deltalog/location/awsclient -run '^$' -bench S3Endpoint -benchmem
func BenchmarkS3Endpoint(b *testing.B) {
	p := s3.EndpointParameters{Bucket: aws.String("lake-bucket"), Region: aws.String("us-east-1"),
		Key: aws.String("bronze/orders/_delta_log/00000000000000000042.json"), UseFIPS: aws.Bool(false),
		UseDualStack: aws.Bool(false), ForcePathStyle: aws.Bool(false), Accelerate: aws.Bool(false),
		DisableMultiRegionAccessPoints: aws.Bool(false), UseArnRegion: aws.Bool(false)}
	for _, r := range []struct {
		name string
		r    s3.EndpointResolverV2
	}{{"sdk", s3.NewDefaultEndpointResolverV2()}, {"cached", awsclient.CachedS3Endpoints(nil)}} {
		b.Run(r.name, func(b *testing.B) {
			ctx := context.Background()
			for b.Loop() {
				if _, err := r.r.ResolveEndpoint(ctx, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
