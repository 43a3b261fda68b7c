import { describe, expect, it } from "vitest";
import { interpolateStoreFilename, readStoreSettings } from "../../../src/upload/storeSettings.js";
import { partSizeFor } from "../../../src/upload/uploadFile.js";

const MIB = 1024 * 1024;

describe("STORE_* settings, with browsertrix-crawler's meaning", () => {
  it("is off without STORE_ENDPOINT_URL", () => {
    expect(readStoreSettings({ STORE_PATH: "x/", WEBHOOK_URL: "http://127.0.0.1/" })).toBeNull();
  });

  it("takes the bucket from the first path segment and appends STORE_PATH as it is to make the key prefix", () => {
    const settings = readStoreSettings({
      STORE_ENDPOINT_URL: "https://s3.example.org:9000/my-bucket/crawls/", STORE_PATH: "team-a/2024/",
      STORE_ACCESS_KEY: "AK", STORE_SECRET_KEY: "SK", STORE_USER: "alice", WEBHOOK_URL: "https://hooks.example.org/done",
    });
    expect(settings).toEqual({
      endpoint: "https://s3.example.org:9000", bucket: "my-bucket", keyPrefix: "crawls/team-a/2024/",
      publicPrefix: "https://s3.example.org:9000/my-bucket/crawls/team-a/2024/", accessKey: "AK", secretKey: "SK",
      region: "us-east-1", filenameTemplate: "@ts-@id.wacz", user: "alice", webhookUrl: "https://hooks.example.org/done",
    });
    // No separator is added: "bucket" + "path/" is bucket "bucketpath", as browsertrix-crawler reads it.
    expect(readStoreSettings({ STORE_ENDPOINT_URL: "http://127.0.0.1:9000/bucket", STORE_PATH: "path/" })).toMatchObject({ bucket: "bucketpath", keyPrefix: "" });
    expect(readStoreSettings({ STORE_ENDPOINT_URL: "http://127.0.0.1:9000/bucket", STORE_PATH: "/path/", STORE_REGION: "eu-west-3", STORE_FILENAME: "x.wacz" }))
      .toMatchObject({ bucket: "bucket", keyPrefix: "path/", region: "eu-west-3", filenameTemplate: "x.wacz", webhookUrl: null });
  });

  it("refuses, in one line, an endpoint that is not an http(s) URL naming a bucket, and a webhook it cannot call", () => {
    expect(() => readStoreSettings({ STORE_ENDPOINT_URL: "not a url" })).toThrow('STORE_ENDPOINT_URL (+ STORE_PATH) is not a URL: "not a url"');
    expect(() => readStoreSettings({ STORE_ENDPOINT_URL: "ftp://h/bucket/" })).toThrow("STORE_ENDPOINT_URL must be an http:// or https:// URL");
    expect(() => readStoreSettings({ STORE_ENDPOINT_URL: "http://h:9000/" })).toThrow("STORE_ENDPOINT_URL must name the bucket");
    expect(() => readStoreSettings({ STORE_ENDPOINT_URL: "http://h/b/", WEBHOOK_URL: "mailto:x@y" })).toThrow("WEBHOOK_URL must be an http(s):// URL or redis://host:port/db/key");
    expect(() => readStoreSettings({ STORE_ENDPOINT_URL: "http://h/b/", WEBHOOK_URL: "redis://h:6379/list" })).toThrow("WEBHOOK_URL must be");
    expect(readStoreSettings({ STORE_ENDPOINT_URL: "http://h/b/", WEBHOOK_URL: "redis://h:6379/2/done-list" })?.webhookUrl).toBe("redis://h:6379/2/done-list");
  });

  it("fills in @ts (UTC digits to the millisecond), @hostname, @hostsuffix (its last 14 characters) and @id, each once", () => {
    const at = new Date("2024-03-05T07:08:09.123Z");
    const host = "crawl-job-7f9c2-worker-0";
    expect(interpolateStoreFilename("@ts-@id.wacz", "my-crawl", at, host)).toBe("20240305070809123-my-crawl.wacz");
    expect(interpolateStoreFilename("@hostname/@hostsuffix-@id.wacz", "c1", at, host)).toBe(`${host}/7f9c2-worker-0-c1.wacz`);
    expect(interpolateStoreFilename("@id-@id.wacz", "c1", at, host)).toBe("c1-@id.wacz");
  });

  it("uploads in 16 MiB parts (5 MiB at least under the test hook), bigger ones for files that would need over 10,000", () => {
    expect(partSizeFor(100 * MIB, {})).toBe(16 * MIB);
    expect(partSizeFor(100 * MIB, { WARC_CRAWLER_TEST_UPLOAD_PART_MIB: "5" })).toBe(5 * MIB);
    expect(partSizeFor(100 * MIB, { WARC_CRAWLER_TEST_UPLOAD_PART_MIB: "1" })).toBe(5 * MIB);
    const huge = 500 * 1024 * MIB;
    expect(partSizeFor(huge, {})).toBe(Math.ceil(huge / 9_999));
    expect(Math.ceil(huge / partSizeFor(huge, {}))).toBeLessThanOrEqual(10_000);
  });
});
