package bucket

import (
	"context"
	"fmt"
	"strings"
)

// DefaultStore is the store URL used when none is given: a directory beside
// the working directory.
const DefaultStore = "./weft-data"

// storeForms lists the store URLs Open accepts, for error messages.
const storeForms = "a directory path, file://DIR, or s3://BUCKET[/PREFIX]"

// Open opens the store a URL names:
//
//   - a directory path ("./weft-data", "/srv/weft") or file://DIR
//     ("file:///srv/weft", "file://weft-data"): an FS, creating DIR;
//   - s3://BUCKET or s3://BUCKET/PREFIX: an S3 bucket, wrapped in Prefix when
//     PREFIX is set. The endpoint, keys and region come from s3's non-empty
//     fields, else from S3ConfigFromEnv. s3.Bucket, if set, must match.
//
// Anything else, "" included, is an error that lists the accepted forms.
// An S3 store is an io.Closer: Close releases its idle connections.
func Open(ctx context.Context, storeURL string, s3 S3Config) (Bucket, error) {
	switch {
	case storeURL == "":
		return nil, fmt.Errorf("empty store URL: want %s (default %s)", storeForms, DefaultStore)
	case strings.HasPrefix(storeURL, "file://"):
		dir := strings.TrimPrefix(storeURL, "file://")
		if dir == "" {
			return nil, fmt.Errorf("store %q: no directory after file://", storeURL)
		}
		return newFSStore(storeURL, dir)
	case strings.HasPrefix(storeURL, "s3://"):
		return openS3Store(ctx, storeURL, s3)
	case strings.Contains(storeURL, "://"):
		return nil, fmt.Errorf("store %q: unknown scheme: want %s", storeURL, storeForms)
	}
	return newFSStore(storeURL, storeURL)
}

func newFSStore(storeURL, dir string) (Bucket, error) {
	f, err := NewFS(dir)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", storeURL, err)
	}
	return f, nil
}

// parseS3URL splits s3://BUCKET/PREFIX; the prefix loses its slashes at
// both ends.
func parseS3URL(storeURL string) (bucketName, prefix string, err error) {
	rest := strings.TrimPrefix(storeURL, "s3://")
	bucketName, prefix, _ = strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucketName == "" {
		return "", "", fmt.Errorf("store %q: no bucket name: want s3://BUCKET[/PREFIX]", storeURL)
	}
	if prefix != "" {
		if err := ValidateKey(prefix); err != nil {
			return "", "", fmt.Errorf("store %q: bad prefix: %w", storeURL, err)
		}
	}
	return bucketName, prefix, nil
}

func openS3Store(ctx context.Context, storeURL string, over S3Config) (Bucket, error) {
	bucketName, prefix, err := parseS3URL(storeURL)
	if err != nil {
		return nil, err
	}
	if over.Bucket != "" && over.Bucket != bucketName {
		return nil, fmt.Errorf("store %q: the URL names bucket %q but the S3 config names %q", storeURL, bucketName, over.Bucket)
	}
	cfg := mergeS3Config(S3ConfigFromEnv(), over)
	cfg.Bucket = bucketName
	s, err := NewS3(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", storeURL, err)
	}
	return Prefix(s, prefix), nil
}

// mergeS3Config returns base with over's non-empty fields.
func mergeS3Config(base, over S3Config) S3Config {
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&base.Endpoint, over.Endpoint)
	set(&base.AccessKey, over.AccessKey)
	set(&base.SecretKey, over.SecretKey)
	set(&base.Region, over.Region)
	set(&base.Bucket, over.Bucket)
	return base
}
