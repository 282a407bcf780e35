package channels

import "testing"

func TestImageType(t *testing.T) {
	for _, tc := range []struct {
		data string
		want string
	}{
		{"\x89PNG\r\n\x1a\n....", "image/png"},
		{"\xff\xd8\xff\xe0JFIF", "image/jpeg"},
		{"GIF89a...", "image/gif"},
		{"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"},
		{"<!DOCTYPE html><html>Sign in to Slack", ""},
		{"\x89PNG", ""},
		{"RIFF\x00\x00\x00\x00WAVE", ""},
		{"", ""},
	} {
		got, ok := ImageType([]byte(tc.data))
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ImageType(%q) = %q, %v; want %q", tc.data, got, ok, tc.want)
		}
	}
}
