// cluster-key-slot (ioredis' own dependency): the Redis Cluster slot of a key (CRC16 of its hash tag).
declare module "cluster-key-slot" {
  export default function keySlot(key: string | Buffer): number;
}
