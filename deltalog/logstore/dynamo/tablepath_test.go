package dynamo

import "testing"

func TestTablePath(t *testing.T) {
	for _, tc := range []struct {
		url, scheme, want string
	}{
		{"s3://bucket/warehouse/orders", "", "s3://bucket/warehouse/orders"},
		{"s3://bucket/warehouse/orders/", "s3a", "s3a://bucket/warehouse/orders"},
		{"s3://bucket//warehouse///orders//", "s3a", "s3a://bucket/warehouse/orders"},
		{"s3a://user:secret@bucket/t", "s3a", "s3a://bucket/t"},
		{"s3://bucket/my table/é", "s3", "s3://bucket/my table/é"},
		{"s3://bucket", "s3", "s3://bucket/"},
		{"s3://bucket/", "s3a", "s3a://bucket/"},
	} {
		got, err := TablePath(tc.url, tc.scheme)
		if err != nil || got != tc.want {
			t.Errorf("TablePath(%q, %q) = %q, %v; want %q", tc.url, tc.scheme, got, err, tc.want)
		}
	}
	for _, bad := range []string{"bucket/t", "s3:///t"} {
		if _, err := TablePath(bad, ""); err == nil {
			t.Errorf("TablePath(%q) succeeded", bad)
		}
	}
}
