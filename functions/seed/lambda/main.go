// Command lambda is the seed Lambda's bootstrap binary (make build names it bootstrap): it
// starts aws-lambda-go's runtime loop on the handler of functions/seed.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/seed"
)

func main() { lambda.Start(seed.Lambda().Handle) }
