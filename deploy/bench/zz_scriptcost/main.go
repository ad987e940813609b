package main

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

func main() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6390"})
	ctx := context.Background()
	for _, f := range os.Args[1:] {
		b, _ := os.ReadFile(f)
		sha, err := rdb.ScriptLoad(ctx, ratelimit.WindowLua+string(b)).Result()
		fmt.Println(f, sha, err)
	}
}
