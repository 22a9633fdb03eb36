// Command fake-gcs-xml is fake-gcs-server (its fakestorage library, pinned in go.mod) with the writes of Google
// Cloud Storage's XML API added, the ones the Rust object_store crate (delta-rs's store) sends for gs:// and
// fake-gcs-server refuses (an upload without uploadType is 400 there; fsouza/fake-gcs-server#1164 and #2092,
// unmerged): an object PUT to /BUCKET/KEY, a copy (PUT with x-goog-copy-source), both under
// x-goog-if-generation-match, and a multipart upload (POST ?uploads, PUT ?partNumber&uploadId, POST ?uploadId,
// DELETE ?uploadId); and the list-type=2 listing with start-after, continuation-token and max-keys (fake-gcs-server
// answers every object whatever start-after says, so delta-rs takes old log entries for new versions).
// Everything else (the JSON API, reads with ranges, deletes) is fake-gcs-server's own. Run by tests/servers/gcs.py; one log line per request on stdout.
package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/fsouza/fake-gcs-server/fakestorage"
	"github.com/gorilla/handlers"
)

// The JSON API's and the server's own paths: never an XML write.
var jsonPrefixes = []string{"/storage/v1/", "/upload/", "/download/", "/batch/", "/_internal/"}

type upload struct {
	bucket, key, contentType string
	parts                    map[int][]byte
}

type xmlWrites struct {
	srv     *fakestorage.Server
	next    http.Handler
	host    string
	mu      sync.Mutex // a conditional write reads the generation and writes as one step
	uploads map[string]*upload
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", 4443, "port to listen on")
	flag.Parse()
	addr := fmt.Sprintf("%s:%d", *host, *port)
	srv, err := fakestorage.NewServerWithOptions(fakestorage.Options{
		NoListener: true, Scheme: "http", Host: *host, Port: uint16(*port),
		PublicHost: addr, ExternalURL: "http://" + addr,
	})
	if err != nil {
		log.Fatal(err)
	}
	writes := &xmlWrites{srv: srv, next: srv.HTTPHandler(), host: addr, uploads: map[string]*upload{}}
	log.Printf("fake-gcs-xml listening on %s", addr)
	log.Fatal(http.ListenAndServe(addr, handlers.LoggingHandler(os.Stdout, writes)))
}

func (x *xmlWrites) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key, ok := x.xmlObject(r)
	query := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && query.Get("list-type") == "2" && x.listed(r) != "":
		x.list(w, x.listed(r), query)
	case !ok:
		x.next.ServeHTTP(w, r)
	case r.Method == http.MethodPost && query.Has("uploads"):
		x.startUpload(w, r, bucket, key)
	case r.Method == http.MethodPut && query.Has("uploadId"):
		x.putPart(w, r, query.Get("uploadId"), query.Get("partNumber"))
	case r.Method == http.MethodPost && query.Has("uploadId"):
		x.completeUpload(w, r, query.Get("uploadId"))
	case r.Method == http.MethodDelete && query.Has("uploadId"):
		x.abortUpload(w, query.Get("uploadId"))
	case r.Method == http.MethodPut && r.Header.Get("x-goog-copy-source") != "":
		x.copyObject(w, r, bucket, key)
	case r.Method == http.MethodPut && !query.Has("uploadType"):
		x.putObject(w, r, bucket, key)
	default:
		x.next.ServeHTTP(w, r)
	}
}

// xmlObject is the bucket and object a path-style XML API request to this host names.
func (x *xmlWrites) xmlObject(r *http.Request) (string, string, bool) {
	if r.Host != x.host {
		return "", "", false
	}
	for _, prefix := range jsonPrefixes {
		if strings.HasPrefix(r.URL.Path, prefix) {
			return "", "", false
		}
	}
	bucket, key, found := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	return bucket, key, found && bucket != "" && key != ""
}

// listed is the bucket a path-style listing (GET /BUCKET?list-type=2) names, "" for another request.
func (x *xmlWrites) listed(r *http.Request) string {
	bucket := strings.Trim(r.URL.Path, "/")
	if r.Host != x.host || bucket == "" || strings.Contains(bucket, "/") {
		return ""
	}
	return bucket
}

type listEntry struct {
	name   string
	object *fakestorage.ObjectAttrs
}

// list answers a ListObjectsV2 page: objects and common prefixes in name order after start-after and the
// continuation token (the last name of the page before), at most max-keys (1000) of them.
func (x *xmlWrites) list(w http.ResponseWriter, bucket string, query url.Values) {
	if _, err := x.srv.Backend().GetBucket(bucket); err != nil {
		xmlError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist.")
		return
	}
	objects, prefixes, err := x.srv.ListObjectsWithOptions(bucket, fakestorage.ListOptions{
		Prefix: query.Get("prefix"), Delimiter: query.Get("delimiter")})
	if err != nil {
		xmlError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	after := max(query.Get("start-after"), query.Get("continuation-token"))
	limit, err := strconv.Atoi(query.Get("max-keys"))
	if err != nil || limit <= 0 || limit > 1000 {
		limit = 1000
	}
	entries := make([]listEntry, 0, len(objects)+len(prefixes))
	for index := range objects {
		entries = append(entries, listEntry{objects[index].Name, &objects[index]})
	}
	for _, prefix := range prefixes {
		entries = append(entries, listEntry{name: prefix})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })
	var page bytes.Buffer
	count, truncated, last := 0, false, ""
	for _, entry := range entries {
		if entry.name <= after {
			continue
		}
		if count == limit {
			truncated = true
			break
		}
		count, last = count+1, entry.name
		if entry.object == nil {
			fmt.Fprintf(&page, "<CommonPrefixes><Prefix>%s</Prefix></CommonPrefixes>", escape(entry.name))
			continue
		}
		fmt.Fprintf(&page, "<Contents><Key>%s</Key><Generation>%d</Generation><LastModified>%s</LastModified>"+
			"<ETag>%s</ETag><Size>%d</Size></Contents>", escape(entry.name), entry.object.Generation,
			entry.object.Updated.UTC().Format("2006-01-02T15:04:05.000Z"), escape(strconv.Quote(entry.object.Etag)),
			entry.object.Size)
	}
	next := ""
	if truncated {
		next = "<NextContinuationToken>" + escape(last) + "</NextContinuationToken>"
	}
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	fmt.Fprintf(w, "<?xml version='1.0' encoding='UTF-8'?><ListBucketResult><Name>%s</Name><Prefix>%s</Prefix>"+
		"<KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys><IsTruncated>%t</IsTruncated>%s%s</ListBucketResult>",
		escape(bucket), escape(query.Get("prefix")), count, limit, truncated, next, page.String())
}

func xmlError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<?xml version='1.0' encoding='UTF-8'?><Error><Code>%s</Code><Message>%s</Message></Error>", code, message)
}

// write stores the object if the bucket exists and x-goog-if-generation-match (0: "does not exist") holds,
// answering as GCS does: the new object's ETag and generation, else 404 or 412.
func (x *xmlWrites) write(w http.ResponseWriter, r *http.Request, obj fakestorage.Object) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if _, err := x.srv.Backend().GetBucket(obj.BucketName); err != nil {
		xmlError(w, http.StatusNotFound, "NoSuchBucket", "The specified bucket does not exist.")
		return
	}
	if wanted := r.Header.Get("x-goog-if-generation-match"); wanted != "" {
		current := int64(0)
		if old, err := x.srv.GetObject(obj.BucketName, obj.Name); err == nil {
			current = old.Generation
		}
		if generation, err := strconv.ParseInt(wanted, 10, 64); err != nil || generation != current {
			xmlError(w, http.StatusPreconditionFailed, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold.")
			return
		}
	}
	obj.Metadata = map[string]string{}
	for name, values := range r.Header {
		if meta, found := strings.CutPrefix(strings.ToLower(name), "x-goog-meta-"); found {
			obj.Metadata[meta] = values[0]
		}
	}
	if err := x.srv.CreateObjectStreaming(obj.StreamingObject()); err != nil {
		xmlError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	stored, err := x.srv.GetObject(obj.BucketName, obj.Name)
	if err != nil {
		xmlError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	w.Header().Set("ETag", strconv.Quote(stored.Etag))
	w.Header().Set("x-goog-generation", strconv.FormatInt(stored.Generation, 10))
	w.WriteHeader(http.StatusOK)
}

func (x *xmlWrites) putObject(w http.ResponseWriter, r *http.Request, bucket, key string) {
	content, err := io.ReadAll(r.Body)
	if err != nil {
		xmlError(w, http.StatusBadRequest, "IncompleteBody", err.Error())
		return
	}
	x.write(w, r, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{
		BucketName: bucket, Name: key, ContentType: r.Header.Get("Content-Type")}, Content: content})
}

func (x *xmlWrites) copyObject(w http.ResponseWriter, r *http.Request, bucket, key string) {
	source, err := url.PathUnescape(strings.TrimPrefix(r.Header.Get("x-goog-copy-source"), "/"))
	fromBucket, fromKey, found := strings.Cut(source, "/")
	if err != nil || !found {
		xmlError(w, http.StatusBadRequest, "InvalidArgument", "x-goog-copy-source is BUCKET/OBJECT")
		return
	}
	from, err := x.srv.GetObject(fromBucket, fromKey)
	if err != nil {
		xmlError(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
		return
	}
	x.write(w, r, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{
		BucketName: bucket, Name: key, ContentType: from.ContentType}, Content: from.Content})
}

func (x *xmlWrites) startUpload(w http.ResponseWriter, r *http.Request, bucket, key string) {
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	uploadID := hex.EncodeToString(id)
	x.mu.Lock()
	x.uploads[uploadID] = &upload{bucket: bucket, key: key, contentType: r.Header.Get("Content-Type"), parts: map[int][]byte{}}
	x.mu.Unlock()
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	fmt.Fprintf(w, "<?xml version='1.0' encoding='UTF-8'?><InitiateMultipartUploadResult><Bucket>%s</Bucket>"+
		"<Key>%s</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>", escape(bucket), escape(key), uploadID)
}

func (x *xmlWrites) putPart(w http.ResponseWriter, r *http.Request, uploadID, number string) {
	part, err := strconv.Atoi(number)
	content, readErr := io.ReadAll(r.Body)
	if err != nil || readErr != nil || part < 1 || part > 10000 {
		xmlError(w, http.StatusBadRequest, "InvalidArgument", "a part is numbered 1 to 10000")
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	pending, found := x.uploads[uploadID]
	if !found {
		xmlError(w, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist.")
		return
	}
	pending.parts[part] = content
	w.Header().Set("ETag", strconv.Quote(fmt.Sprintf("part-%d-%d", part, len(content))))
	w.WriteHeader(http.StatusOK)
}

type completion struct {
	Parts []struct {
		PartNumber int `xml:"PartNumber"`
	} `xml:"Part"`
}

func (x *xmlWrites) completeUpload(w http.ResponseWriter, r *http.Request, uploadID string) {
	var asked completion
	if err := xml.NewDecoder(r.Body).Decode(&asked); err != nil {
		xmlError(w, http.StatusBadRequest, "MalformedXML", err.Error())
		return
	}
	x.mu.Lock()
	pending, found := x.uploads[uploadID]
	delete(x.uploads, uploadID)
	x.mu.Unlock()
	if !found {
		xmlError(w, http.StatusNotFound, "NoSuchUpload", "The specified upload does not exist.")
		return
	}
	numbers := make([]int, 0, len(asked.Parts))
	for _, part := range asked.Parts {
		numbers = append(numbers, part.PartNumber)
	}
	sort.Ints(numbers)
	var content bytes.Buffer
	for _, number := range numbers {
		part, known := pending.parts[number]
		if !known {
			xmlError(w, http.StatusBadRequest, "InvalidPart", "One or more of the specified parts could not be found.")
			return
		}
		content.Write(part)
	}
	x.write(w, r, fakestorage.Object{ObjectAttrs: fakestorage.ObjectAttrs{
		BucketName: pending.bucket, Name: pending.key, ContentType: pending.contentType}, Content: content.Bytes()})
}

func (x *xmlWrites) abortUpload(w http.ResponseWriter, uploadID string) {
	x.mu.Lock()
	delete(x.uploads, uploadID)
	x.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func escape(text string) string {
	var out bytes.Buffer
	_ = xml.EscapeText(&out, []byte(text))
	return out.String()
}
