// Command lambda is the backfill-wave Lambda's bootstrap binary (make build names it
// bootstrap): it sets the garbage collector from the function's memory (internal/lambdagc)
// and starts aws-lambda-go's runtime loop on the handler of functions/backfill-wave.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	backfillwave "github.com/mssqlcdc/mssqlcdc/functions/backfill-wave"
	"github.com/mssqlcdc/mssqlcdc/internal/lambdagc"
)

func main() {
	lambdagc.Configure(os.Getenv)
	lambda.Start(backfillwave.Lambda().Handle)
}
