package dynamo_test

import "testing"

// Two log stores of one table (another object, same tablePath) are not joint: the batch
// would ask each key twice, which DynamoDB refuses (ValidationException: duplicates),
// where Latest answers.
func TestReview6SameTablePathNotJoint(t *testing.T) {
	f := newJointFixture(t, 3)
	twin := f.open(f.e.store, true)
	if _, err := twin.Latest(t.Context()); err != nil {
		t.Fatal(err)
	}
	if f.bronze.JointWith(twin) {
		t.Error("JointWith: true for two log stores of one table")
	}
	v, ov, ok, err := f.bronze.LatestWith(t.Context(), twin)
	if err != nil || v != 2 || ok {
		t.Errorf("LatestWith of two log stores of one table = %d, %d, %v, %v; want 2", v, ov, ok, err)
	}
}
