export type { IoRedisLike, NodeRedisLike, RedisClientLike } from "./client.js";
export { type RedisStoreOptions, redisStore } from "./store.js";
