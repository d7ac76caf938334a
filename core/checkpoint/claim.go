package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// claimHolder is the claim with the highest number k among dir's <k>.json files (k as
// claim writes it: keyNumber), and k (0 and a zero Claim when none exists).
func (c *Checkpoint) claimHolder(ctx context.Context, dir string) (Claim, int, error) {
	top := 0
	for info, err := range c.store.List(ctx, dir, "") {
		if err != nil {
			return Claim{}, 0, fmt.Errorf("read claims: %w", err)
		}
		name, ok := strings.CutSuffix(strings.TrimPrefix(info.Key, dir), ".json")
		if k, isNum := keyNumber(name); ok && isNum && k > int64(top) {
			top = int(k)
		}
	}
	if top == 0 {
		return Claim{}, 0, nil
	}
	var cl Claim
	err := c.getJSON(ctx, dir+strconv.Itoa(top)+".json", &cl)
	return cl, top, err
}

// claim claims what dir's claims are for (what names it, for errors) for execution: ok
// when it holds the claim (its own, a new one, or taken over with takeover), else the
// holder's claim and false. Each claim is a file written once (PutIfAbsent); two
// executions racing for a claim number both read the winner's.
func (c *Checkpoint) claim(ctx context.Context, dir, what, execution string, takeover bool, now time.Time) (Claim, bool, error) {
	for range 3 {
		cl, top, err := c.claimHolder(ctx, dir)
		if err != nil {
			return Claim{}, false, err
		}
		if top > 0 && cl.Execution == execution {
			return cl, true, nil
		}
		if top > 0 && !takeover {
			return cl, false, nil
		}
		mine := Claim{Execution: execution, At: now.UTC()}
		err = c.putOnce(ctx, dir+strconv.Itoa(top+1)+".json", mine)
		var cs *ConcurrentStreamError
		if errors.As(err, &cs) {
			takeover = false // another execution wrote that number: read who holds it
			continue
		}
		if err != nil {
			return Claim{}, false, err
		}
		return mine, true, nil
	}
	return Claim{}, false, fmt.Errorf("claim %s: the claims kept changing", what)
}
