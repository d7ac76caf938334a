// Command lambda is the backfill-wave Lambda's bootstrap binary (make build names it
// bootstrap): it starts aws-lambda-go's runtime loop on the handler of
// functions/backfill-wave.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	backfillwave "github.com/mssqlcdc/mssqlcdc/functions/backfill-wave"
)

func main() { lambda.Start(backfillwave.Lambda().Handle) }
