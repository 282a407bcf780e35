// Command bareclient is the floor BenchmarkChatOneShot measures dreamgate
// against: a Go program that starts, posts one chat-completions request
// body (the one dreamgate sent) to the same fake model, and prints the
// reply.
//
// Usage: bareclient BASE_URL API_KEY BODY_FILE
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: bareclient BASE_URL API_KEY BODY_FILE")
		os.Exit(2)
	}
	body, err := os.ReadFile(os.Args[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	req, err := http.NewRequest(http.MethodPost, os.Args[1]+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+os.Args[2])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || len(out.Choices) == 0 {
		fmt.Fprintln(os.Stderr, "bad answer:", resp.Status, err)
		os.Exit(1)
	}
	fmt.Println(out.Choices[0].Message.Content)
}
