package nginxtest

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"testing"
)

// TestServer checks the WebDAV configuration that the remote cache relies
// on: PUT creates the directories on the way and answers 201, GET returns
// the bytes, HEAD the size, a missing entry is 404, an upload larger than
// nginx's default 1 MB limit is accepted, and Stop leaves nothing running.
func TestServer(t *testing.T) {
	s := StartT(t)
	body := bytes.Repeat([]byte("dragonx "), 300_000) // 2.4 MB
	url := s.URL + "/cas/0123"
	req, _ := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("PUT %s = %s, want 201 Created", url, resp.Status)
	}
	resp, err = http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(got, body) {
		t.Fatalf("GET %s = %s, %d bytes; want 200, %d bytes", url, resp.Status, len(got), len(body))
	}
	resp, err = http.Head(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ContentLength != int64(len(body)) {
		t.Errorf("HEAD %s: Content-Length %d, want %d", url, resp.ContentLength, len(body))
	}
	if b, err := os.ReadFile(s.Path("cas", "0123")); err != nil || !bytes.Equal(b, body) {
		t.Errorf("the file on disk: %d bytes, %v", len(b), err)
	}
	resp, err = http.Get(s.URL + "/ac/none")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET of a missing entry = %s, want 404", resp.Status)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("the server still answers after Stop")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	resp, err = http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("GET after Restart = %s, want 200", resp.Status)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("the server still answers after Kill")
	}
}
