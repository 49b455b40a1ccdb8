#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
float rows[256][4] __attribute__((aligned(64)));
#define R (&rows[0][0])
#define F(i) ((i)%2 ? (uint32_t)(p[(i)/2]>>32) : (uint32_t)p[(i)/2])
#define LF(i) _mm_loadu_ps(R+F(i))
#define J(k) _mm512_insertf32x8(_mm512_castps256_ps512(cc[0][k]),cc[1][k],1)
#define Y(a,b) _mm256_insertf128_ps(_mm256_castps128_ps256(LF(a)),LF(b),1)
static inline __m512 horner(__m512 z0,__m512 z1,__m512 z2,__m512 z3,__m512 t){
        __m512 t0=_mm512_unpacklo_ps(z0,z1),t1=_mm512_unpackhi_ps(z0,z1),t2=_mm512_unpacklo_ps(z2,z3),t3=_mm512_unpackhi_ps(z2,z3);
        __m512 c0=_mm512_shuffle_ps(t0,t2,0x44),c1=_mm512_shuffle_ps(t0,t2,0xEE),c2=_mm512_shuffle_ps(t1,t3,0x44),c3=_mm512_shuffle_ps(t1,t3,0xEE);
        return _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(c0,t,c1),t,c2),t,c3);
}
int main(int argc,char**argv){
  int n=1<<14; float *x=aligned_alloc(64,n*4),*y=aligned_alloc(64,n*4);
  for(int i=0;i<n;i++) x[i]=(rand()/(float)RAND_MAX)*255.9f;
  for(int k=0;k<4;k++)for(int i=0;i<256;i++){rows[i][k]=rand()/(float)RAND_MAX;}
  for(int round=0;round<3;round++)
  for(int mode=1;mode<10;mode++){
  double best=1e9;
  for(int rep=0;rep<300;rep++){
    double t0=now();
    for(int j=0;j<n;j+=16){
      if(mode==6){
        for(int h=0;h<2;h++){
          __m256 xv=_mm256_load_ps(x+j+8*h);
          __m256i idx=_mm256_cvttps_epi32(xv);
          __m256 t=_mm256_sub_ps(xv,_mm256_cvtepi32_ps(idx));
          __m256i o=_mm256_slli_epi32(idx,2);
          __m128i q0=_mm256_castsi256_si128(o),q1=_mm256_extracti128_si256(o,1);
          uint64_t p[4]={_mm_cvtsi128_si64(q0),_mm_extract_epi64(q0,1),_mm_cvtsi128_si64(q1),_mm_extract_epi64(q1,1)};
          __m256 a=Y(0,4),b=Y(1,5),c=Y(2,6),d=Y(3,7);
          __m256 t0=_mm256_unpacklo_ps(a,b),t1=_mm256_unpackhi_ps(a,b),t2=_mm256_unpacklo_ps(c,d),t3=_mm256_unpackhi_ps(c,d);
          __m256 c0=_mm256_shuffle_ps(t0,t2,0x44),c1=_mm256_shuffle_ps(t0,t2,0xEE),c2=_mm256_shuffle_ps(t1,t3,0x44),c3=_mm256_shuffle_ps(t1,t3,0xEE);
          _mm256_store_ps(y+j+8*h,_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(c0,t,c1),t,c2),t,c3));
        }
        continue;
      }
      if(mode==7){
        __m512 xv=_mm512_load_ps(x+j);
        __m512i idx=_mm512_cvttps_epi32(xv);
        __m512 t=_mm512_sub_ps(xv,_mm512_cvtepi32_ps(idx));
        __m512i o=_mm512_slli_epi32(idx,2);
        uint64_t pp[8] __attribute__((aligned(64)));
        _mm512_store_si512(pp,o);
        __m256 cc[2][4];
        for(int h=0;h<2;h++){
          uint64_t *p=pp+4*h;
          __m256 a=Y(0,4),b=Y(1,5),c=Y(2,6),d=Y(3,7);
          __m256 t0=_mm256_unpacklo_ps(a,b),t1=_mm256_unpackhi_ps(a,b),t2=_mm256_unpacklo_ps(c,d),t3=_mm256_unpackhi_ps(c,d);
          cc[h][0]=_mm256_shuffle_ps(t0,t2,0x44),cc[h][1]=_mm256_shuffle_ps(t0,t2,0xEE),cc[h][2]=_mm256_shuffle_ps(t1,t3,0x44),cc[h][3]=_mm256_shuffle_ps(t1,t3,0xEE);
        }
        #define J(k) _mm512_insertf32x8(_mm512_castps256_ps512(cc[0][k]),cc[1][k],1)
        __m512 c0=J(0),c1=J(1),c2=J(2),c3=J(3);
        _mm512_store_ps(y+j,_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(c0,t,c1),t,c2),t,c3));
        continue;
      }
      if(mode==8||mode==9){
        __m512 xv=_mm512_load_ps(x+j);
        __m512i idx=_mm512_cvttps_epi32(xv);
        __m512 t=_mm512_sub_ps(xv,_mm512_cvtepi32_ps(idx));
        __m512i o=_mm512_slli_epi32(idx,2);
        __m128i q[4]={_mm512_castsi512_si128(o),_mm512_extracti32x4_epi32(o,1),_mm512_extracti32x4_epi32(o,2),_mm512_extracti32x4_epi32(o,3)};
        __m256 cc[2][4];
        for(int h=0;h<2;h++){
          uint64_t p[4]={_mm_cvtsi128_si64(q[2*h]),_mm_extract_epi64(q[2*h],1),_mm_cvtsi128_si64(q[2*h+1]),_mm_extract_epi64(q[2*h+1],1)};
          __m256 a=Y(0,4),b=Y(1,5),c=Y(2,6),d=Y(3,7);
          __m256 t0=_mm256_unpacklo_ps(a,b),t1=_mm256_unpackhi_ps(a,b),t2=_mm256_unpacklo_ps(c,d),t3=_mm256_unpackhi_ps(c,d);
          cc[h][0]=_mm256_shuffle_ps(t0,t2,0x44),cc[h][1]=_mm256_shuffle_ps(t0,t2,0xEE),cc[h][2]=_mm256_shuffle_ps(t1,t3,0x44),cc[h][3]=_mm256_shuffle_ps(t1,t3,0xEE);
        }
        if(mode==8){
        __m512 c0=J(0),c1=J(1),c2=J(2),c3=J(3);
        _mm512_store_ps(y+j,_mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_fmadd_ps(c0,t,c1),t,c2),t,c3));
        } else {
          __m256 th[2]={_mm512_castps512_ps256(t),_mm512_extractf32x8_ps(t,1)};
          __m256 rh[2];
          for(int h=0;h<2;h++) rh[h]=_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(cc[h][0],th[h],cc[h][1]),th[h],cc[h][2]),th[h],cc[h][3]);
          _mm512_store_ps(y+j,_mm512_insertf32x8(_mm512_castps256_ps512(rh[0]),rh[1],1));
        }
        continue;
      }
      if(mode==5){
        __m256 xv0[2]; 
        for(int h=0;h<2;h++){
          __m256 xv=_mm256_load_ps(x+j+8*h);
          __m256i idx=_mm256_cvttps_epi32(xv);
          __m256 t=_mm256_sub_ps(xv,_mm256_cvtepi32_ps(idx));
          __m256i o=_mm256_slli_epi32(idx,2);
          uint64_t p[4] __attribute__((aligned(32)));
          _mm256_store_si256((__m256i*)p,o);
          __m256 a=Y(0,4),b=Y(1,5),c=Y(2,6),d=Y(3,7);
          __m256 t0=_mm256_unpacklo_ps(a,b),t1=_mm256_unpackhi_ps(a,b),t2=_mm256_unpacklo_ps(c,d),t3=_mm256_unpackhi_ps(c,d);
          __m256 c0=_mm256_shuffle_ps(t0,t2,0x44),c1=_mm256_shuffle_ps(t0,t2,0xEE),c2=_mm256_shuffle_ps(t1,t3,0x44),c3=_mm256_shuffle_ps(t1,t3,0xEE);
          _mm256_store_ps(y+j+8*h,_mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_fmadd_ps(c0,t,c1),t,c2),t,c3));
        }
        continue;
      }
      __m512 xv=_mm512_load_ps(x+j);
      __m512i idx=_mm512_cvttps_epi32(xv);
      __m512 t=_mm512_sub_ps(xv,_mm512_cvtepi32_ps(idx));
      __m512i o=_mm512_slli_epi32(idx,2);
      __m512 z[4];
      if(mode==0){ // stack
        uint32_t offs[16] __attribute__((aligned(64)));
        _mm512_store_si512(offs,o);
        for(int i=0;i<4;i++){ z[i]=_mm512_castps128_ps512(_mm_loadu_ps(R+offs[i])); z[i]=_mm512_insertf32x4(z[i],_mm_loadu_ps(R+offs[i+4]),1);z[i]=_mm512_insertf32x4(z[i],_mm_loadu_ps(R+offs[i+8]),2);z[i]=_mm512_insertf32x4(z[i],_mm_loadu_ps(R+offs[i+12]),3);}
      } else if(mode==1){ // vpextrd
        __m128i q[4]={_mm512_castsi512_si128(o),_mm512_extracti32x4_epi32(o,1),_mm512_extracti32x4_epi32(o,2),_mm512_extracti32x4_epi32(o,3)};
        #define E(i) ((uint32_t)_mm_extract_epi32(q[(i)/4],(i)%4))
        #define LD(i) _mm_loadu_ps(R+E(i))
        z[0]=_mm512_castps128_ps512(LD(0));z[0]=_mm512_insertf32x4(z[0],LD(4),1);z[0]=_mm512_insertf32x4(z[0],LD(8),2);z[0]=_mm512_insertf32x4(z[0],LD(12),3);
        z[1]=_mm512_castps128_ps512(LD(1));z[1]=_mm512_insertf32x4(z[1],LD(5),1);z[1]=_mm512_insertf32x4(z[1],LD(9),2);z[1]=_mm512_insertf32x4(z[1],LD(13),3);
        z[2]=_mm512_castps128_ps512(LD(2));z[2]=_mm512_insertf32x4(z[2],LD(6),1);z[2]=_mm512_insertf32x4(z[2],LD(10),2);z[2]=_mm512_insertf32x4(z[2],LD(14),3);
        z[3]=_mm512_castps128_ps512(LD(3));z[3]=_mm512_insertf32x4(z[3],LD(7),1);z[3]=_mm512_insertf32x4(z[3],LD(11),2);z[3]=_mm512_insertf32x4(z[3],LD(15),3);
      } else if(mode==2){ // vpextrq pairs
        __m128i q[4]={_mm512_castsi512_si128(o),_mm512_extracti32x4_epi32(o,1),_mm512_extracti32x4_epi32(o,2),_mm512_extracti32x4_epi32(o,3)};
        uint64_t p[8];
        for(int i=0;i<4;i++){p[2*i]=_mm_cvtsi128_si64(q[i]);p[2*i+1]=_mm_extract_epi64(q[i],1);}
        #define F(i) ((i)%2 ? (uint32_t)(p[(i)/2]>>32) : (uint32_t)p[(i)/2])
        #define LF(i) _mm_loadu_ps(R+F(i))
        z[0]=_mm512_castps128_ps512(LF(0));z[0]=_mm512_insertf32x4(z[0],LF(4),1);z[0]=_mm512_insertf32x4(z[0],LF(8),2);z[0]=_mm512_insertf32x4(z[0],LF(12),3);
        z[1]=_mm512_castps128_ps512(LF(1));z[1]=_mm512_insertf32x4(z[1],LF(5),1);z[1]=_mm512_insertf32x4(z[1],LF(9),2);z[1]=_mm512_insertf32x4(z[1],LF(13),3);
        z[2]=_mm512_castps128_ps512(LF(2));z[2]=_mm512_insertf32x4(z[2],LF(6),1);z[2]=_mm512_insertf32x4(z[2],LF(10),2);z[2]=_mm512_insertf32x4(z[2],LF(14),3);
        z[3]=_mm512_castps128_ps512(LF(3));z[3]=_mm512_insertf32x4(z[3],LF(7),1);z[3]=_mm512_insertf32x4(z[3],LF(11),2);z[3]=_mm512_insertf32x4(z[3],LF(15),3);
      } else if(mode==4){ // stack pairs, ymm inserts then one zmm insert
        uint64_t p[8] __attribute__((aligned(64)));
        _mm512_store_si512(p,o);
        #define J(k) _mm512_insertf32x8(_mm512_castps256_ps512(cc[0][k]),cc[1][k],1)
#define Y(a,b) _mm256_insertf128_ps(_mm256_castps128_ps256(LF(a)),LF(b),1)
        for(int i=0;i<4;i++){}
        z[0]=_mm512_insertf32x8(_mm512_castps256_ps512(Y(0,4)),Y(8,12),1);
        z[1]=_mm512_insertf32x8(_mm512_castps256_ps512(Y(1,5)),Y(9,13),1);
        z[2]=_mm512_insertf32x8(_mm512_castps256_ps512(Y(2,6)),Y(10,14),1);
        z[3]=_mm512_insertf32x8(_mm512_castps256_ps512(Y(3,7)),Y(11,15),1);
      } else if(mode==3){
        uint64_t p[8] __attribute__((aligned(64)));
        _mm512_store_si512(p,o);
        z[0]=_mm512_castps128_ps512(LF(0));z[0]=_mm512_insertf32x4(z[0],LF(4),1);z[0]=_mm512_insertf32x4(z[0],LF(8),2);z[0]=_mm512_insertf32x4(z[0],LF(12),3);
        z[1]=_mm512_castps128_ps512(LF(1));z[1]=_mm512_insertf32x4(z[1],LF(5),1);z[1]=_mm512_insertf32x4(z[1],LF(9),2);z[1]=_mm512_insertf32x4(z[1],LF(13),3);
        z[2]=_mm512_castps128_ps512(LF(2));z[2]=_mm512_insertf32x4(z[2],LF(6),1);z[2]=_mm512_insertf32x4(z[2],LF(10),2);z[2]=_mm512_insertf32x4(z[2],LF(14),3);
        z[3]=_mm512_castps128_ps512(LF(3));z[3]=_mm512_insertf32x4(z[3],LF(7),1);z[3]=_mm512_insertf32x4(z[3],LF(11),2);z[3]=_mm512_insertf32x4(z[3],LF(15),3);
      }
      _mm512_store_ps(y+j,horner(z[0],z[1],z[2],z[3],t));
    }
    double dt=now()-t0; if(dt<best)best=dt;
  }
  printf("mode %d: %.3f ns/elem  %.2f cyc/elem@3.67\n",mode,best/n*1e9,best/n*1e9*3.67);
  }
  return (int)y[5];
}
