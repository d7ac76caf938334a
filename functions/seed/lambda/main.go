// Command lambda is the seed Lambda's bootstrap binary (make build names it bootstrap): it
// starts aws-lambda-go's runtime loop on the handler of functions/seed.
package main

import (
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/seed"
	"github.com/mssqlcdc/mssqlcdc/internal/lambdagc"
)

func main() {
	lambdagc.Configure(os.Getenv)
	lambda.Start(seed.Lambda().Handle)
}
