// Command lambda is the maintain Lambda's bootstrap binary (make build names it
// bootstrap): it starts aws-lambda-go's runtime loop on the handler of functions/maintain.
package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/mssqlcdc/mssqlcdc/functions/maintain"
)

func main() { lambda.Start(maintain.Lambda().Handle) }
