package channels

import "bytes"

// MaxImageBytes caps one image an adapter downloads for a model that reads
// images: well under providers' own limits (OpenAI takes 20 MB), and a
// bound on what one queued message holds in memory.
const MaxImageBytes = 5 << 20

// ImageType returns the MIME type of data when it is an image format vision
// models take (PNG, JPEG, GIF, WebP), judged by its bytes rather than by
// what the platform claims: a download that returned an HTML page (a
// missing scope) or a format models refuse (HEIC, TIFF, SVG) is not one.
func ImageType(data []byte) (string, bool) {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png", true
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return "image/jpeg", true
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "image/gif", true
	case len(data) >= 12 && bytes.HasPrefix(data, []byte("RIFF")) && string(data[8:12]) == "WEBP":
		return "image/webp", true
	}
	return "", false
}

// IsImageType reports whether mime names one of the formats ImageType
// recognises, for a platform's claim about a file before it is read.
func IsImageType(mime string) bool {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return true
	}
	return false
}
