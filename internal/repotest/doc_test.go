// Package repotest holds tests of the repository itself rather than of one package: that
// its comments and docs cite only documents inside it, and that those citations resolve.
package repotest
