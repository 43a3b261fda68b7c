// s3rver ships no types: the part of its API the upload tests use.
declare module "s3rver" {
  import type { EventEmitter } from "node:events";

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory: string;
    configureBuckets?: { name: string }[];
  }

  /** One S3 event notification; eventName is ObjectCreated:Put for a PUT, ObjectCreated:Post for a completed multipart upload. */
  interface S3rverEvent {
    Records: { eventName: string; s3: { bucket: { name: string }; object: { key: string; size: number } } }[];
  }

  export default class S3rver extends EventEmitter {
    constructor(options: S3rverOptions);
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
    on(event: "event", listener: (event: S3rverEvent) => void): this;
  }
}
