import { BlockList, isIP } from "node:net";
import { RecentlyUsed } from "../util/recentlyUsed.js";

/** What kind of network an IP address is on, as far as deciding whether the crawler may connect to it. */
export type AddressCategory =
  | "public"
  /** 127.0.0.0/8, ::1 */
  | "loopback"
  /** RFC 1918, carrier-grade NAT (100.64.0.0/10), unique local IPv6 (fc00::/7) */
  | "private"
  /** 169.254.0.0/16, fe80::/10: where clouds serve instance metadata and credentials */
  | "link-local"
  /** Cloud metadata services outside link-local (Alibaba 100.100.100.200, AWS fd00:ec2::254) and their names */
  | "metadata"
  /** 0.0.0.0/8, :: (Linux connects 0.0.0.0 to the local host) */
  | "unspecified"
  /** Multicast and broadcast: never a web server */
  | "multicast"
  /** Reserved for future use (240.0.0.0/4) or documentation only */
  | "reserved";

export const ADDRESS_CATEGORIES: readonly AddressCategory[] = ["public", "loopback", "private", "link-local", "metadata", "unspecified", "multicast", "reserved"];

/** Host names of cloud metadata services, refused by name before any resolution. */
export const METADATA_HOST_NAMES: ReadonlySet<string> = new Set([
  "metadata.google.internal",
  "metadata.goog",
  "metadata",
  "instance-data",
  "instance-data.ec2.internal",
]);

// Checked in this order: the narrow metadata addresses before the ranges that hold them.
const RANGES: [Exclude<AddressCategory, "public">, string[]][] = [
  ["metadata", ["100.100.100.200/32", "fd00:ec2::254/128"]],
  ["unspecified", ["0.0.0.0/8", "::/128"]],
  ["loopback", ["127.0.0.0/8", "::1/128"]],
  ["link-local", ["169.254.0.0/16", "fe80::/10"]],
  ["private", ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7"]],
  ["multicast", ["224.0.0.0/4", "255.255.255.255/32", "ff00::/8"]],
  ["reserved", ["240.0.0.0/4", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32"]],
];

/** An IP range: "10.0.0.0/8", "fd00::/8", or one address. */
export class AddressRange {
  private readonly list = new BlockList();

  constructor(readonly text: string) {
    const [address, bits, extra] = text.trim().split("/");
    const family = isIP(address);
    const prefix = bits === undefined ? (family === 6 ? 128 : 32) : Number(bits);
    if (!family || extra !== undefined || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 6 ? 128 : 32) || (bits !== undefined && !/^\d+$/.test(bits))) {
      throw new Error(`not an IP address or CIDR range: ${JSON.stringify(text)}`);
    }
    this.list.addSubnet(address, prefix, family === 6 ? "ipv6" : "ipv4");
  }

  contains(address: string): boolean {
    const family = isIP(address);
    return family !== 0 && this.list.check(address, family === 6 ? "ipv6" : "ipv4");
  }
}

const CATEGORY_RANGES: [AddressCategory, AddressRange[]][] = RANGES.map(([category, ranges]) => [category, ranges.map((r) => new AddressRange(r))]);

/**
 * The category of an IP address. An IPv6 address that carries an IPv4 one (IPv4-mapped ::ffff:a.b.c.d,
 * IPv4-compatible, NAT64 64:ff9b::/96) is judged by the IPv4 address it reaches.
 */
export function categoryOf(address: string): AddressCategory {
  const known = KNOWN_CATEGORIES.get(address);
  if (known !== undefined) return known;
  const ip = embeddedIpv4(address) ?? address;
  const category = CATEGORY_RANGES.find(([, ranges]) => ranges.some((range) => range.contains(ip)))?.[0] ?? "public";
  KNOWN_CATEGORIES.set(address, category);
  return category;
}

/**
 * Categories already worked out, by address: every request of a page and every connection is judged, mostly against
 * the same few addresses, and each range check makes a SocketAddress of its own.
 */
const KNOWN_CATEGORIES = new RecentlyUsed<string, AddressCategory>(4096);

/** The IPv4 address an IPv6 address stands for, if it embeds one; else null. */
export function embeddedIpv4(address: string): string | null {
  if (isIP(address) !== 6) return null;
  const hextets = expandIpv6(address);
  if (!hextets) return null;
  const zeroTo = (n: number) => hextets.slice(0, n).every((h) => h === 0);
  const mapped = zeroTo(5) && hextets[5] === 0xffff;
  const compatible = zeroTo(6) && (hextets[6] !== 0 || hextets[7] > 1);
  const nat64 = hextets[0] === 0x64 && hextets[1] === 0xff9b && hextets.slice(2, 6).every((h) => h === 0);
  if (!mapped && !compatible && !nat64) return null;
  return [hextets[6] >> 8, hextets[6] & 0xff, hextets[7] >> 8, hextets[7] & 0xff].join(".");
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 part and a zone allowed). */
function expandIpv6(address: string): number[] | null {
  let text = address.split("%")[0].toLowerCase();
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const bytes = dotted[1].split(".").map(Number);
    text = text.slice(0, -dotted[1].length) + `${((bytes[0] << 8) | bytes[1]).toString(16)}:${((bytes[2] << 8) | bytes[3]).toString(16)}`;
  }
  const [head, tail] = text.split("::");
  const groups = (part: string | undefined) => (part ? part.split(":").map((h) => Number.parseInt(h, 16)) : []);
  const front = groups(head);
  const back = groups(tail);
  const missing = 8 - front.length - back.length;
  if (tail === undefined ? missing !== 0 : missing < 0) return null;
  const all = [...front, ...Array<number>(Math.max(missing, 0)).fill(0), ...back];
  return all.every((h) => Number.isInteger(h) && h >= 0 && h <= 0xffff) ? all : null;
}
