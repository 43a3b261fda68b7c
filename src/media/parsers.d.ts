// m3u8-parser and mpd-parser (video.js' HLS and DASH parsers) ship no types: the parts of their output we read.
declare module "m3u8-parser" {
  export interface HlsKey {
    method: string;
    uri?: string;
  }
  export interface HlsSegment {
    uri: string;
    duration?: number;
    map?: { uri: string };
    key?: HlsKey;
  }
  export interface HlsVariant {
    uri: string;
    attributes: { BANDWIDTH?: number; RESOLUTION?: { width: number; height: number }; AUDIO?: string; SUBTITLES?: string };
  }
  export interface HlsRendition {
    uri?: string;
  }
  export interface HlsManifest {
    playlists?: HlsVariant[];
    mediaGroups?: Record<string, Record<string, Record<string, HlsRendition>>>;
    segments: HlsSegment[];
    endList?: boolean;
    targetDuration?: number;
    contentProtection?: Record<string, { attributes?: Record<string, string> }>;
  }
  export class Parser {
    manifest: HlsManifest;
    push(text: string): void;
    end(): void;
  }
}

declare module "mpd-parser" {
  export interface DashSegment {
    resolvedUri: string;
    map?: { resolvedUri: string };
  }
  export interface DashPlaylist {
    attributes: { NAME?: string; BANDWIDTH?: number; RESOLUTION?: { width: number; height: number } };
    segments: DashSegment[];
    sidx?: { resolvedUri: string };
    contentProtection?: Record<string, unknown>;
  }
  export interface DashManifest {
    playlists: DashPlaylist[];
    mediaGroups: Record<string, Record<string, Record<string, { playlists?: DashPlaylist[] }>>>;
  }
  export function parse(text: string, options: { manifestUri: string }): DashManifest;
}
