package auth_test

import (
	"context"
	"fmt"
	"time"

	"github.com/weftdata/weft/auth"
	"github.com/weftdata/weft/bucket"
)

// A token for one project, checked the way a Flight handler checks it.
func Example() {
	ctx := context.Background()
	b := bucket.NewMem()
	secret, _, _ := auth.CreateToken(ctx, b, auth.TokenSpec{Name: "trainer", Projects: map[string]auth.Scope{"robotics": auth.Read}}, time.Now())
	store, _ := auth.NewStore(b, auth.DefaultOptions())
	p, _ := store.Authenticate(ctx, secret)
	ctx = auth.NewContext(ctx, p) // what the interceptors do
	fmt.Println(auth.Require(ctx, "robotics", auth.Read))
	fmt.Println(auth.Require(ctx, "robotics", auth.Write))
	// Output:
	// <nil>
	// permission denied: token "trainer" has read access to project "robotics", this call needs write; ask an admin for a token with that scope
}

// Tickets signed by one server verify on every server over the bucket.
func ExampleSigner() {
	ctx := context.Background()
	b := bucket.NewMem()
	s1, _ := auth.NewSigner(ctx, b, auth.DefaultSignerOptions())
	s2, _ := auth.NewSigner(ctx, b, auth.DefaultSignerOptions())
	ticket := s1.Sign(ctx, []byte(`{"run":"…","rank":3}`))
	payload, err := s2.Verify(ctx, ticket)
	fmt.Println(string(payload), err)
	ticket[0] ^= 1
	_, err = s2.Verify(ctx, ticket)
	fmt.Println(err != nil)
	// Output:
	// {"run":"…","rank":3} <nil>
	// true
}
