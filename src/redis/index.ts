export type { IoRedisLike, NodeRedisLike, RedisClientLike } from "./client.js";
export { redisDriver } from "./description.js";
export { type RedisStoreOptions, redisStore } from "./store.js";
